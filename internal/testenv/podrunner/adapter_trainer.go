package podrunner

import (
	"context"
	"fmt"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"path/filepath"
	"regexp"
	"slices"
)

// trainerAdapter runs the Kubeflow Trainer controller manager of a pod from
// Trainer's chart (charts/kubeflow-trainer of the module, or its kustomize
// manifests): image ghcr.io/kubeflow/trainer/trainer-controller-manager, run
// with the testenv-built manager (TrainerVersion), the chart's configuration
// file (its ConfigMap, mounted with --config) and the webhook certificates
// Trainer's cert rotator writes into the chart's Secret
// kubeflow-trainer-webhook-cert (mounted at
// /tmp/k8s-webhook-server/serving-certs).
//
// What changes, and why:
//   - webhook, health probe, metrics and the status server listen on free
//     loopback ports instead of :9443, :8081, :8443 and :10443 (webhook.port
//     and host, statusServer.port); the egress proxy maps the webhook
//     Service's targetPort to the moved port, the runner probes /readyz on
//     its moved port;
//   - Trainer's configuration has no webhook.certDir (and is decoded
//     strictly, so none can be added): its webhook server uses
//     controller-runtime's default, $TMPDIR/k8s-webhook-server/serving-certs.
//     The process runs with TMPDIR=<pod dir>/tmp, in which that directory is
//     a link to the projected Secret;
//   - its cert rotator waits until tls.crt exists in the fixed directory
//     /tmp/k8s-webhook-server/serving-certs (see linkFixedCertDir); the
//     status server (feature gate TrainJobStatus, off by default) would read
//     its certificate from there too;
//   - leaderElection.resourceNamespace is the pod's namespace when the
//     configuration leaves it empty (the chart does);
//   - --kubeconfig with the pod's service account token.
//
// The namespace cannot be moved: Trainer v2.3 reads it only from the in-pod
// path and otherwise uses kubeflow-system (for its cert rotator's Secret and
// the webhook's DNS name). So the adapter runs Trainer pods in
// kubeflow-system only.
//
// Its chart's JobSet subchart is not installed (jobset.install=false: its
// OCI registry is unreachable offline, and JobSet only works in
// jobset-system): list JobSet before Trainer in Options.Controllers. The
// chart's default runtimes are applied by a post-install hook Job that needs
// a real container (alpine, `apk add kubectl`), so runtimes.defaultEnabled
// is false; ClusterTrainingRuntimes are the test's to create.
var Trainer = &Adapter{
	Name:       "trainer",
	Binary:     trainerSpec(TrainerVersion, binaries.K8s036, "~2 min alone, less with tools/k8s-v0.36 built"),
	Alternates: []binaries.Spec{trainerSpec(TrainerPreviousVersion, binaries.K8s035, "~1 min with tools/k8s-v0.35 built")},
	Image:      regexp.MustCompile(`^((ghcr|docker)\.io/)?kubeflow/trainer/trainer-controller-manager[:@]`),
	Prepare:    prepareTrainerPod,
	Install: Install{
		Chart:     Source{Module: TrainerModule, Version: TrainerVersion, Dir: catalog.Trainer.ChartDir},
		Namespace: trainerNamespace, Release: catalog.Trainer.Release, Serves: catalog.Trainer.Serves,
		Values: map[string]any{
			"jobset":   map[string]any{"install": false},
			"manager":  map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}},
			"runtimes": map[string]any{"defaultEnabled": false},
		},
	},
	Answers: trainerAnswers,
}

// Trainer's module and the version of its controller manager testenv builds
// and runs.
var (
	TrainerModule  = catalog.Trainer.Module
	TrainerVersion = catalog.ModuleVersion(catalog.Trainer.DefaultVersion)
	// TrainerPreviousVersion is the default before TrainerVersion, still
	// run for the upgrade from it: a pod whose image is tagged with it (the
	// chart's default tag, its version with a "v") runs it.
	TrainerPreviousVersion = "v2.2.0"
)

// trainerSpec is the Trainer controller manager of a version, built in dir
// (a tools module that requires that version).
func trainerSpec(version, dir, cold string) binaries.Spec {
	return binaries.Spec{Name: "trainer-controller-manager", Version: version, Module: TrainerModule, Package: TrainerModule + "/cmd/trainer-controller-manager",
		Dir: dir, ColdBuild: cold}
}

// trainerNamespace is the namespace Trainer uses outside a pod.
var trainerNamespace = catalog.Trainer.Namespace

const (
	// trainerStatusPort is the default of statusServer.port.
	trainerStatusPort = 10443
)

func prepareTrainerPod(lp *localPod) error {
	if err := lp.inNamespace("Trainer", TrainerVersion, trainerNamespace); err != nil {
		return err
	}
	c := lp.container
	args := slices.Clone(c.Args)
	cfg, configAt, err := lp.configArg(args)
	if err != nil {
		return err
	}
	if configAt < 0 {
		return fmt.Errorf("container %s has no --config=<file> argument", c.Name)
	}
	free, err := process.FreePorts(4)
	if err != nil {
		return err
	}

	webhook := configSection(cfg, "webhook")
	webhookPort := int32(9443)
	if p, ok := webhook["port"].(float64); ok && p > 0 {
		webhookPort = int32(p)
	}
	lp.ports[webhookPort] = free[0]
	webhook["host"], webhook["port"] = "127.0.0.1", free[0]
	if err := lp.moveProbeAndMetrics(cfg, args, free[1], free[2]); err != nil {
		return err
	}
	status := configSection(cfg, "statusServer")
	statusPort := int32(trainerStatusPort)
	if p, ok := status["port"].(float64); ok && p > 0 {
		statusPort = int32(p)
	}
	lp.ports[statusPort] = free[3]
	status["port"] = free[3]
	if election := configSection(cfg, "leaderElection"); election["resourceNamespace"] == nil || election["resourceNamespace"] == "" {
		election["resourceNamespace"] = trainerNamespace
	}

	// The webhook server's certificates: $TMPDIR/k8s-webhook-server/serving-certs.
	if err := lp.tmpWebhookCertDir(); err != nil {
		return err
	}
	certs, _ := lp.localPath(webhookCertMount)
	if mgmt, _ := cfg["certManagement"].(map[string]any); mgmt == nil || mgmt["enable"] != false {
		if err := lp.linkFixedCertDir(certs); err != nil {
			return err
		}
	}

	if err := lp.writeConfig(cfg, args, configAt, "controller_manager_config.yaml"); err != nil {
		return err
	}
	lp.args = append(args, "--kubeconfig="+filepath.Join(lp.dir, "kubeconfig"))
	return nil
}

// trainerAnswers dry-run creates a TrainJob that sets a reserved torch
// variable, which Trainer's validating webhook denies: a denial is an answer.
func trainerAnswers(ctx context.Context, client dynamic.Interface) error {
	tj := map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{"name": "testenv-probe", "namespace": "default"},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": "testenv-probe"},
			"trainer":    map[string]any{"env": []any{map[string]any{"name": "PET_NNODES", "value": "1"}}},
		},
	}
	return dryRunAnswered(ctx, client, schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}, tj)
}
