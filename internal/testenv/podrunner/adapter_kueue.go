package podrunner

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"context"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// KueueVersion is the Kueue manager testenv builds and runs by default:
// testenv.Kueue() installs its chart.
const KueueVersion = "v0.17.0"

// KueueVersions are the Kueue versions testenv can run (KueueAt): their
// charts are in the Go module cache, their managers are built on first use
// and cached by version. A Kueue pod runs the manager its image tag names
// (release-0.19, v0.19.2: the chart's default tag, or an upstream one).
var KueueVersions = []string{KueueVersion, "v0.19.2"}

// kueueSpec is how the Kueue manager of a version is built.
func kueueSpec(version string) binaries.Spec {
	cold := "~10 min"
	if version == "v0.19.2" {
		cold = "10-30 min" // measured: see KueueAt
	}
	dir := binaries.K8s035 // v0.17.0
	if version == "v0.19.2" {
		dir = binaries.K8s036
	}
	return binaries.Spec{Name: "kueue", Version: version, Module: catalog.KueueModule, Package: catalog.KueueModule + "/cmd/kueue", Dir: dir, ColdBuild: cold}
}

// kueueAlternates are KueueVersions other than KueueVersion.
func kueueAlternates() []binaries.Spec {
	var out []binaries.Spec
	for _, v := range KueueVersions[1:] {
		out = append(out, kueueSpec(v))
	}
	return out
}

// kueueVersionOf is the KueueVersions entry whose minor version the image's
// tag names ("" when none does: the runner runs the default manager).
func kueueVersionOf(image string) string {
	tag := imageTag(image)
	for _, v := range KueueVersions {
		if strings.Contains(tag, kueueMinor(v)) {
			return v
		}
	}
	return ""
}

// kueueMinor is "0.17" of "v0.17.0".
func kueueMinor(version string) string {
	return strings.Join(strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)[:2], ".")
}

// KueueAt is the Kueue adapter with the chart and manager of one of
// KueueVersions (an error for others). The runner's registered Kueue
// adapter runs its pods: the image tag of that chart picks the manager.
// The first build of the v0.19.2 manager took 30 min 19 s on the 2-core
// machine while ~8 agents shared it (load average 13-20), with the Go build
// cache already holding v0.17.0's Kubernetes dependencies; the v0.17.0
// manager takes ~10 min on an idle machine.
func KueueAt(version string) (*Adapter, error) {
	if !slices.Contains(KueueVersions, version) {
		return nil, fmt.Errorf("testenv runs Kueue %s, not %s", strings.Join(KueueVersions, " or "), version)
	}
	a := *Kueue
	a.Binary = kueueSpec(version)
	a.Alternates = nil
	a.Install.Chart.Version = version
	return &a, nil
}

// Kueue runs the Kueue manager of a pod from Kueue's chart (or its
// kustomize manifests): image registry.k8s.io/kueue/kueue, or the staging
// image the chart in the Kueue module defaults to
// (us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue), run with the
// testenv-built manager (KueueVersion), the chart's own configuration file
// (its ConfigMap, mounted with --config) and the webhook certificates that
// Kueue's cert rotator writes into the chart's Secret (the mounted certDir).
//
// What changes, and why:
//   - webhook, health probe, metrics (and pprof, when set) listen on free
//     loopback ports instead of :9443, :8081, :8443, which every Kueue on the
//     machine would want; the egress proxy maps the webhook Service's
//     targetPort to the moved port, the runner probes /readyz on its moved
//     port;
//   - paths point at the projected volumes: --config, webhook.certDir;
//   - namespace and leaderElection.resourceNamespace are set to the pod's
//     namespace when the configuration leaves them empty: Kueue and
//     controller-runtime would read it from the fixed in-pod path
//     /var/run/secrets/kubernetes.io/serviceaccount/namespace;
//   - --kubeconfig with the pod's service account token (in a pod: in-cluster
//     configuration), so Kueue works with the chart's RBAC;
//   - VisibilityOnDemand=false, the only feature turned off: the visibility
//     API server keeps its certificates in the fixed directory /visibility
//     (no flag or setting moves it), which every Kueue on the machine would
//     share and only root may create. Its APIService stays unavailable; the
//     egress proxy answers its Service with 503 and the reason.
//
// Leader election stays as configured (on in the chart): it works against the
// API server like anywhere else.
var Kueue = &Adapter{
	Name:       "kueue",
	Binary:     kueueSpec(KueueVersion),
	Alternates: kueueAlternates(),
	VersionOf:  kueueVersionOf,
	Image:      regexp.MustCompile(`^(registry\.k8s\.io|us-central1-docker\.pkg\.dev/k8s-staging-images)/kueue/kueue[:@]`),
	Prepare:    prepareKueuePod,
	Install: Install{
		Chart:     Source{Module: catalog.KueueModule, Version: KueueVersion, Dir: catalog.KueueChartDir},
		Namespace: catalog.KueueNamespace, Release: catalog.KueueRelease, Serves: catalog.KueueGroup + "/" + catalog.KueueAPIVersion,
	},
	Answers: kueueAnswers,
}

// kueueVisibilityPort is the manager's visibility server port (its
// --visibility-server-port default, the chart's containerPort "visibility").
const kueueVisibilityPort = 8082

func prepareKueuePod(lp *localPod) error {
	c := lp.container
	// v0.17.0 or the chart's staging tag release-0.17 run v0.17.0.
	args := slices.Clone(c.Args)
	cfg, configAt, err := lp.configArg(args)
	if err != nil {
		return err
	}
	if configAt < 0 {
		return fmt.Errorf("container %s has no --config=<file> argument", c.Name)
	}
	pod, _, _ := lp.state()
	if ns, _ := cfg["namespace"].(string); ns == "" {
		cfg["namespace"] = pod.Namespace
	}
	// controller-runtime, too, would read the lease's namespace from there.
	if election := configSection(cfg, "leaderElection"); election["leaderElect"] == true {
		if ns, _ := election["resourceNamespace"].(string); ns == "" {
			election["resourceNamespace"] = pod.Namespace
		}
	}

	free, err := process.FreePorts(4)
	if err != nil {
		return err
	}
	if err := lp.moveWebhookServer(cfg, free[0]); err != nil {
		return err
	}
	if err := lp.moveProbeAndMetrics(cfg, args, free[1], free[2]); err != nil {
		return err
	}
	if err := lp.moveConfigAddr(cfg, "pprofBindAddress", "", free[3]); err != nil {
		return err
	}
	// Kueue's visibility server is off (VisibilityOnDemand=false): its
	// certificate directory is the fixed path /visibility, which clusters on
	// one machine would share. Its APIService still names the port: a stub
	// serves the group's discovery, with no resources, and
	// its Service gets an endpoint, so the APIService is Available.
	const off = "Kueue's visibility server is off (VisibilityOnDemand=false): its certificate directory is the fixed path /visibility, which clusters on one machine would share"
	visibility, err := lp.serveEmptyAPI("visibility.kueue.x-k8s.io", off, "v1beta2", "v1beta1")
	if err != nil {
		return err
	}
	lp.ports[kueueVisibilityPort] = visibility
	lp.publishEndpoints(kueueVisibilityPort)

	if err := lp.writeConfig(cfg, args, configAt, "controller_manager_config.yaml"); err != nil {
		return err
	}

	gates := -1
	for i, a := range args {
		if strings.HasPrefix(a, "--feature-gates=") {
			gates = i
		}
	}
	if gates < 0 {
		args = append(args, "--feature-gates=VisibilityOnDemand=false")
	} else {
		var kept []string
		for _, g := range strings.Split(strings.TrimPrefix(args[gates], "--feature-gates="), ",") {
			if g != "" && !strings.HasPrefix(g, "VisibilityOnDemand=") {
				kept = append(kept, g)
			}
		}
		args[gates] = "--feature-gates=" + strings.Join(append(kept, "VisibilityOnDemand=false"), ",")
	}
	lp.args = append(args, "--kubeconfig="+filepath.Join(lp.dir, "kubeconfig"))
	return nil
}

// kueueAnswers dry-run creates a v1beta2 ResourceFlavor, which goes through
// Kueue's mutating and validating webhooks, and a v1beta1 Cohort, which also
// goes through the CRD conversion webhook.
func kueueAnswers(ctx context.Context, client dynamic.Interface) error {
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, probe := range []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{
		{schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}, "ResourceFlavor"},
		{schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "cohorts"}, "Cohort"},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": probe.gvr.GroupVersion().String(),
			"kind":       probe.kind,
			"metadata":   map[string]any{"name": "testenv-probe"},
			"spec":       map[string]any{},
		}}
		// Admission runs before the storage's existence check, so
		// AlreadyExists is an answer too.
		if _, err := client.Resource(probe.gvr).Create(ctx, obj, dryRun); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("dry-run create of a %s %s: %w", probe.gvr.Version, probe.kind, err)
		}
	}
	return nil
}
