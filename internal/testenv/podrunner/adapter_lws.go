package podrunner

import (
	"fmt"
	"path/filepath"
	"regexp"

	"context"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"strings"
)

// LWS's module and the version of its controller testenv builds and runs.
var (
	LWSModule  = catalog.LWS.Module
	LWSVersion = catalog.ModuleVersion(catalog.LWS.DefaultVersion)
	// LWSPreviousVersion is the default before LWSVersion, still run for
	// the upgrade from it: a pod whose image is tagged with it (the chart's
	// image.manager.tag) runs it. The chart's own tag, "main", runs
	// LWSVersion.
	LWSPreviousVersion = "v0.7.0"
)

// lwsSpec is the LWS controller of a version: built in dir (a module of
// the repository that requires that version), or alone in the module's
// directory when dir is "".
func lwsSpec(version, dir, cold string) binaries.Spec {
	return binaries.Spec{Name: "lws-controller", Version: version, Module: LWSModule, Package: "./cmd", Dir: dir, ColdBuild: cold,
		LDFlags: "-X sigs.k8s.io/lws/pkg/version.GitVersion=" + version} // unstamped, it calls itself v0.0.0-main
}

// LWS runs the LeaderWorkerSet controller of a pod from LWS's chart
// (charts/lws of the module, or its kustomize manifests): image
// registry.k8s.io/lws/lws (the chart's default, tag "main" or the release)
// or its staging image, run with the testenv-built controller (LWSVersion),
// the chart's configuration file (its ConfigMap, mounted with --config) and
// the webhook certificates LWS's internal cert management writes into the
// chart's Secret lws-webhook-server-cert (the mounted certDir).
//
// What changes, and why:
//   - webhook, health probe and metrics listen on free loopback ports instead
//     of :9443, :8081, :8443; the egress proxy maps the webhook Service's
//     targetPort (9443) to the moved port, the runner probes /readyz on its
//     moved port;
//   - paths point at the projected volumes: --config, webhook.certDir;
//   - --kubeconfig with the pod's service account token (in a pod:
//     in-cluster configuration), so LWS works with the chart's RBAC.
//
// The namespace cannot be moved: LWS (v0.7 and v0.9) reads it only from the fixed
// in-pod path /var/run/secrets/kubernetes.io/serviceaccount/namespace and
// otherwise uses lws-system, for its leader election lease and for the
// Secret and Service its cert management works with (no flag or setting
// changes that). The chart's CRD, too, names lws-system for its conversion
// webhook. So the adapter runs LWS pods in lws-system only and reports any
// other namespace in the pod's status.
var LWS = &Adapter{
	Name:       "lws",
	Binary:     lwsSpec(LWSVersion, binaries.K8s036, "~1 min with tools/k8s-v0.36 built, ~5 alone"),
	Alternates: []binaries.Spec{lwsSpec(LWSPreviousVersion, binaries.CR022, "~1 min with tools/cr-v0.22 built, ~2-6 alone")},
	Image:      regexp.MustCompile(`^(registry\.k8s\.io|us-central1-docker\.pkg\.dev/k8s-staging-images)/lws/lws[:@]`),
	Prepare:    prepareLWSPod,
	Install: Install{
		Chart:     Source{Module: LWSModule, Version: LWSVersion, Dir: catalog.LWS.ChartDir},
		Namespace: lwsNamespace, Release: catalog.LWS.Release, Serves: catalog.LWS.Serves,
		Values: map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "256Mi"}}},
	},
	Answers: lwsAnswers,
}

// lwsNamespace is the namespace LWS uses outside a pod (its
// utils.GetOperatorNamespace).
var lwsNamespace = catalog.LWS.Namespace

func prepareLWSPod(lp *localPod) error {
	if err := lp.inNamespace("LWS", LWSVersion, lwsNamespace); err != nil {
		return err
	}
	cfg, args, configAt, err := lp.managerConfig("config.lws.x-k8s.io/v1alpha1")
	if err != nil {
		return err
	}

	free, err := process.FreePorts(3)
	if err != nil {
		return err
	}
	if err := lp.moveWebhookServer(cfg, free[0]); err != nil {
		return err
	}

	// LWS's deprecated flags override the configuration: moved where set.
	if err := lp.moveProbeAndMetrics(cfg, args, free[1], free[2]); err != nil {
		return err
	}

	if err := lp.writeConfig(cfg, args, configAt, "controller_manager_config.yaml"); err != nil {
		return err
	}
	lp.args = append(args, "--kubeconfig="+filepath.Join(lp.dir, "kubeconfig"))
	return nil
}

// lwsAnswers dry-run creates a LeaderWorkerSet, which goes through LWS's
// mutating and validating webhooks for LeaderWorkerSets, and a pod labelled
// as a LeaderWorkerSet's, which goes through its pod webhooks. The pod lacks
// the annotations of a real group's pod, so the pod webhook denies it: a
// denial is an answer.
func lwsAnswers(ctx context.Context, client dynamic.Interface) error {
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	container := map[string]any{"name": "probe", "image": "probe"}
	lws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1",
		"kind":       "LeaderWorkerSet",
		"metadata":   map[string]any{"name": "testenv-probe", "namespace": "default"},
		"spec": map[string]any{"leaderWorkerTemplate": map[string]any{
			"workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{container}}},
		}},
	}}
	// Admission runs before the storage's existence check, so AlreadyExists
	// is an answer too.
	if _, err := client.Resource(schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}).Namespace("default").Create(ctx, lws, dryRun); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("dry-run create of a LeaderWorkerSet: %w", err)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name": "testenv-probe", "namespace": "default",
			"labels": map[string]any{"leaderworkerset.sigs.k8s.io/name": "testenv-probe"},
		},
		"spec": map[string]any{"containers": []any{container}},
	}}
	_, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("default").Create(ctx, pod, dryRun)
	if err != nil && !apierrors.IsAlreadyExists(err) && !strings.Contains(err.Error(), "denied the request") {
		return fmt.Errorf("dry-run create of a LeaderWorkerSet's pod: %w", err)
	}
	return nil
}
