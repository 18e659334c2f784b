package podrunner

import (
	"context"
	"errors"
	"fmt"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	"io/fs"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// jobSetAdapter runs the JobSet controller of a pod from JobSet's chart
// (charts/jobset of the module, or its kustomize manifests): image
// registry.k8s.io/jobset/jobset (the release) or the staging image the chart
// defaults to (us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset,
// tag "main"), run with the testenv-built controller (JobSetVersion), the
// chart's configuration file (its ConfigMap, mounted with --config) and the
// webhook certificates JobSet's internal cert management writes into the
// chart's Secret <release>-webhook-server-cert (the mounted certDir).
//
// What changes, and why:
//   - webhook, health probe and metrics listen on free loopback ports instead
//     of :9443, :8081, :8443; the egress proxy maps the webhook Service's
//     targetPort (9443) to the moved port, the runner probes /readyz on its
//     moved port;
//   - paths point at the projected volumes: --config, webhook.certDir;
//   - leaderElection.resourceNamespace is the pod's namespace when the
//     configuration leaves it empty (controller-runtime would read it from
//     the in-pod path /var/run/secrets/kubernetes.io/serviceaccount/namespace);
//   - --kubeconfig with the pod's service account token (in a pod: in-cluster
//     configuration), so JobSet works with the chart's RBAC;
//   - JobSet's cert rotator waits until tls.crt exists in the fixed
//     directory /tmp/k8s-webhook-server/serving-certs (a constant in
//     pkg/util/cert; webhook.certDir does not change it) before it starts its
//     controllers and webhooks, and exits when it never does. The webhook
//     server reads the moved certDir; only that existence check looks at the
//     fixed path, so linkFixedCertDir points it at the pod's projected
//     tls.crt.
//
// The namespace cannot be moved: JobSet v0.12 reads it only from the in-pod
// path and otherwise uses jobset-system, for the Secret and Service its cert
// management works with. So the adapter runs JobSet pods in jobset-system
// only and reports any other namespace in the pod's status.
var JobSet = &Adapter{
	Name:       "jobset",
	Binary:     jobSetSpec(JobSetVersion, binaries.K8s036, "~3 min alone, ~1 with tools/k8s-v0.36 built"),
	Alternates: []binaries.Spec{jobSetSpec(JobSetPreviousVersion, binaries.CR022, "~1 min with tools/cr-v0.22 built, ~3 alone")},
	Image:      regexp.MustCompile(`^(registry\.k8s\.io|us-central1-docker\.pkg\.dev/k8s-staging-images)/jobset/jobset[:@]`),
	Prepare:    prepareJobSetPod,
	Install: Install{
		Chart:     Source{Module: JobSetModule, Version: JobSetVersion, Dir: catalog.JobSet.ChartDir},
		Namespace: jobSetNamespace, Release: catalog.JobSet.Release, Serves: catalog.JobSet.Serves,
		Values: map[string]any{"controller": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}}},
	},
	Answers: jobSetAnswers,
}

// JobSet's module and the version of its controller testenv builds and runs.
var (
	JobSetModule  = catalog.JobSet.Module
	JobSetVersion = catalog.ModuleVersion(catalog.JobSet.DefaultVersion)
	// JobSetPreviousVersion is the default before JobSetVersion, still run
	// for the upgrade from it: a pod whose image is tagged with it runs it.
	// The chart's own tag, "main", runs JobSetVersion.
	JobSetPreviousVersion = "v0.11.1"
)

// jobSetSpec is the JobSet controller of a version: built in dir (a tools
// module that requires that version: v0.11 requires controller-runtime
// v0.22, which tools/cr-v0.22 has), or alone in the module's directory when
// dir is "".
func jobSetSpec(version, dir, cold string) binaries.Spec {
	return binaries.Spec{Name: "jobset-controller", Version: version, Module: JobSetModule, Package: ".", Dir: dir, ColdBuild: cold,
		LDFlags: "-X sigs.k8s.io/jobset/pkg/version.GitVersion=" + version} // unstamped, it calls itself v0.0.0-main
}

// jobSetNamespace is the namespace JobSet uses outside a pod.
var jobSetNamespace = catalog.JobSet.Namespace

const (
	// webhookCertMount is controller-runtime's default webhook certDir,
	// where the charts mount the webhook Secret.
	webhookCertMount = "/tmp/k8s-webhook-server/serving-certs"
)

// fixedWebhookCertDir is where the cert rotators of JobSet and Trainer look
// for the webhook certificate on this machine, whatever the configuration
// says (a variable for the unit tests).
var fixedWebhookCertDir = webhookCertMount

func prepareJobSetPod(lp *localPod) error {
	if err := lp.inNamespace("JobSet", JobSetVersion, jobSetNamespace); err != nil {
		return err
	}
	cfg, args, configAt, err := lp.managerConfig("config.jobset.x-k8s.io/v1alpha1")
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
	if err := lp.moveProbeAndMetrics(cfg, args, free[1], free[2]); err != nil {
		return err
	}
	if election := configSection(cfg, "leaderElection"); election["resourceNamespace"] == nil || election["resourceNamespace"] == "" {
		election["resourceNamespace"] = jobSetNamespace
	}
	if certs, _ := cfg["internalCertManagement"].(map[string]any); certs == nil || certs["enable"] != false {
		certDir, _ := configSection(cfg, "webhook")["certDir"].(string)
		if err := lp.linkFixedCertDir(certDir); err != nil {
			return err
		}
	}
	if err := lp.writeConfig(cfg, args, configAt, "controller_manager_config.yaml"); err != nil {
		return err
	}
	lp.args = append(args, "--kubeconfig="+filepath.Join(lp.dir, "kubeconfig"))
	return nil
}

// linkFixedCertDir makes <fixedWebhookCertDir>/tls.crt, whose existence the
// cert rotators of JobSet and Trainer wait for, a symbolic link to tls.crt in
// localCerts, the pod's projected webhook certificate directory. Like the
// kubelet's Secret volume, the link resolves once the rotator has written the
// Secret and the runner has projected it.
//
// The fixed path is one per machine: a regular file there (someone's own
// certificates) is left alone, as it passes the check already; a link (of
// this or an earlier cluster) is replaced by this pod's. Only existence is
// checked there: each process serves the certificates of its own pod.
func (lp *localPod) linkFixedCertDir(localCerts string) error {
	link := filepath.Join(fixedWebhookCertDir, "tls.crt")
	fi, err := os.Lstat(link)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink == 0:
		lp.logf("%s exists and is not a link; left alone (the cert rotator only checks that it exists)", link)
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(fixedWebhookCertDir, 0o755); err != nil {
		return fmt.Errorf("the cert rotator's fixed directory: %w", err)
	}
	tmp := link + "." + strings.ReplaceAll(filepath.Base(lp.dir), "/", "_") + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Join(localCerts, "tls.crt"), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// jobSetAnswers dry-run creates a JobSet, which goes through JobSet's
// mutating and validating webhooks.
func jobSetAnswers(ctx context.Context, client dynamic.Interface) error {
	js := map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "testenv-probe", "namespace": "default"},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "probe",
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers":    []any{map[string]any{"name": "probe", "image": "probe"}},
			}}}},
		}}},
	}
	return dryRunAnswered(ctx, client, schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}, js)
}
