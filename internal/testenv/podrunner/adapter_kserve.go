package podrunner

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// KServe runs KServe's controller manager (InferenceService, ServingRuntime,
// TrainedModel, InferenceGraph and their webhooks) of a pod from KServe's
// kserve-resources chart: image kserve/kserve-controller, container
// "manager", run with the testenv-built manager (KServeVersion). The
// chart's other container (kube-rbac-proxy, in front of the metrics) is
// not run.
//
// What changes, and why:
//   - the webhook (--webhook-port, default 9443), health probe
//     (--health-probe-addr, :8081) and metrics (--metrics-addr) servers move
//     to free ports; the egress proxy maps the webhook Service's targetPort to
//     the moved port, the runner probes /readyz on its moved port. KServe has
//     no flag for the webhook server's host: it listens on every interface
//     of this machine, at a free port;
//   - the webhook server reads controller-runtime's default certDir,
//     $TMPDIR/k8s-webhook-server/serving-certs: TMPDIR=<pod dir>/tmp, in which
//     that directory is a link to the projected Secret (the chart's
//     kserve-webhook-server-cert). KServe manages no certificate itself: its
//     chart expects cert-manager to write that Secret and inject the CA into
//     its webhook configurations; testenv does both (Install.WebhookCerts);
//   - --leader-elect is dropped: with it, controller-runtime reads the
//     lease's namespace from the in-pod service-account file (KServe has no
//     flag for it) and the manager exits outside a pod;
//   - POD_NAMESPACE is the pod's namespace (the chart sets it from the
//     downward API): KServe reads its namespace from it — for the
//     inferenceservice-config ConfigMap, among others — so, unlike JobSet or
//     LWS, KServe runs in any namespace; the container's other literal
//     environment variables are passed on;
//   - KUBECONFIG is the pod's kubeconfig, with its service account token, so
//     KServe works with the chart's RBAC.
//
// Its binaries are built on demand only (OnDemand): a cluster with
// Options.PodRunner alone does not build KServe (a cold build of the
// manager and llmisvc together took 3m23s on 2 cores, 2026-12-07); name KServe in
// Options.Controllers or Options.Adapters.
var KServe = &Adapter{
	Name: "kserve",
	Binary: binaries.Spec{Name: "kserve-manager", Version: KServeVersion, Module: KServeModule, Package: "./cmd/manager", Dir: binaries.KServe,
		ColdBuild: "~4 min with llmisvc", BuildsAlso: []binaries.Spec{llmisvcSpec}},
	// The previous release, for the upgrade from it (its image's tag runs it).
	Alternates: []binaries.Spec{{Name: "kserve-manager", Version: KServePreviousVersion, Module: KServeModule, Package: "./cmd/manager",
		Dir: binaries.KServe019, ColdBuild: "~1 min after KServeVersion's, ~5 min alone"}},
	Image:     regexp.MustCompile(`^(docker\.io/)?kserve/kserve-controller[:@]`),
	Container: "manager",
	Prepare:   prepareKServePod,
	OnDemand:  true,
	Install: Install{
		Chart:        Source{Module: KServeModule, Version: KServeVersion, Dir: catalog.KServe.ChartDir},
		CRDChart:     Source{Module: KServeModule, Version: KServeVersion, Dir: "charts/kserve-crd"},
		Namespace:    KServeNamespace,
		Release:      "kserve",
		Serves:       catalog.KServe.Serves,
		Values:       KServeValues("Standard"),
		WebhookCerts: []WebhookCert{{Secret: "kserve-webhook-server-cert", Service: "kserve-webhook-server-service"}},
		Omit:         []string{"cert-manager.io"},
	},
	Answers: kserveAnswers,
}

// LLMISvc runs KServe's LLMInferenceService controller of a pod from the
// kserve-llmisvc-resources chart (image kserve/llmisvc-controller), with the
// same moves as KServe's manager, and its webhook certificate
// (llmisvc-webhook-server-cert) from testenv. Its binary is built with the
// manager's (binaries.Spec.BuildsAlso), on request only. List it after
// KServe: its chart leaves the ConfigMap and ClusterStorageContainer both
// charts render to KServe's release. Note that kserve-llmisvc-resources
// also renders the Gateway API Inference Extension's InferencePool CRDs
// (inference.networking.k8s.io and .x-k8s.io) and llm-d's.
var LLMISvc = &Adapter{
	Name:      "llmisvc",
	Binary:    llmisvcSpec,
	Image:     regexp.MustCompile(`^(docker\.io/)?kserve/llmisvc-controller[:@]`),
	Container: "manager",
	Prepare:   prepareKServePod,
	OnDemand:  true,
	Install: Install{
		Chart:        Source{Module: KServeModule, Version: KServeVersion, Dir: "charts/kserve-llmisvc-resources"},
		CRDChart:     Source{Module: KServeModule, Version: KServeVersion, Dir: "charts/kserve-llmisvc-crd"},
		Namespace:    KServeNamespace,
		Release:      "kserve-llmisvc",
		Serves:       "serving.kserve.io/v1alpha2",
		Values:       llmisvcValues(),
		WebhookCerts: []WebhookCert{{Secret: "llmisvc-webhook-server-cert", Service: "llmisvc-webhook-server-service"}},
		Omit:         []string{"cert-manager.io"},
	},
}

var llmisvcSpec = binaries.Spec{Name: "kserve-llmisvc", Version: KServeVersion, Module: KServeModule, Package: "./cmd/llmisvc", Dir: binaries.KServe, ColdBuild: "~15 min"}

// KServe's module, the version of its controllers testenv builds and runs,
// and the namespace its charts default to.
var (
	KServeModule    = catalog.KServe.Module
	KServeVersion   = catalog.ModuleVersion(catalog.KServe.DefaultVersion)
	KServeNamespace = catalog.KServe.Namespace
	// KServePreviousVersion is the release before KServeVersion that the
	// module proxy serves (0.19.1 it refuses), run for the upgrade from it.
	KServePreviousVersion = "v0.19.0"
)

// KServeValues are the values testenv installs KServe's resource charts
// with: the default deployment mode (Standard: plain Deployments and
// Services, no Knative or Istio), small requests, and cert-manager's Issuer
// left out.
//
// KServe's charts render cert-manager's Issuer unless createSharedResources
// is false: `certManager.enabled: false` alone is ignored (the template's
// `enabled | default createSharedResources` treats false as unset). With it
// false, the shared inferenceservice-config ConfigMap and the default
// ClusterStorageContainer are asked for by their own switches. The
// Certificate (serving-cert) is rendered whatever the values say:
// Install.Omit leaves it out.
func KServeValues(deploymentMode string) map[string]any {
	small := map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}
	return map[string]any{"kserve": map[string]any{
		"createSharedResources":  false,
		"certManager":            map[string]any{"enabled": false},
		"inferenceServiceConfig": map[string]any{"enabled": true},
		"storagecontainer":       map[string]any{"enabled": true},
		"controller":             map[string]any{"deploymentMode": deploymentMode, "resources": small},
		"llmisvc":                map[string]any{"controller": map[string]any{"resources": small}},
	}}
}

// llmisvcValues are KServeValues without the objects KServe's resources
// chart has already installed (the inferenceservice-config ConfigMap and
// the default ClusterStorageContainer, which both charts render: Helm
// refuses to take over another release's object).
func llmisvcValues() map[string]any {
	v := KServeValues("Standard")
	k := v["kserve"].(map[string]any)
	k["inferenceServiceConfig"] = map[string]any{"enabled": false}
	k["storagecontainer"] = map[string]any{"enabled": false}
	return v
}

// kserveDefaultPorts are the container ports KServe's flags default to.
var kserveDefaultPorts = map[string]int32{"--webhook-port": 9443, "--health-probe-addr": 8081, "--metrics-addr": 8080}

func prepareKServePod(lp *localPod) error {
	c := lp.container
	// The image's entrypoint is the manager (command /manager); flags after
	// it come before the args.
	in := append(slices.Clone(c.Command[min(len(c.Command), 1):]), c.Args...)
	free, err := process.FreePorts(3)
	if err != nil {
		return err
	}
	moved := map[string]int{"--webhook-port": free[0], "--health-probe-addr": free[1], "--metrics-addr": free[2]}
	ports := map[string]int32{} // flag → the container port it names
	var args []string
	for _, a := range in {
		name, value, _ := strings.Cut(a, "=")
		name = "--" + strings.TrimLeft(name, "-")
		switch name {
		case "--leader-elect":
			continue
		case "--webhook-port":
			n, err := strconv.Atoi(value)
			if err != nil {
				return fmt.Errorf("%s: %w", a, err)
			}
			ports[name] = int32(n)
			continue
		case "--health-probe-addr", "--metrics-addr":
			if value == "0" || value == "" {
				moved[name] = 0
				args = append(args, a)
				continue
			}
			_, p, err := splitPort(value)
			if err != nil {
				return fmt.Errorf("%s: %w", a, err)
			}
			ports[name] = p
			continue
		}
		args = append(args, a)
	}
	for flag, local := range moved {
		if local == 0 {
			continue
		}
		port, ok := ports[flag]
		if !ok {
			port = kserveDefaultPorts[flag]
		}
		lp.ports[port] = local
		if flag == "--webhook-port" {
			args = append(args, flag+"="+strconv.Itoa(local))
		} else {
			args = append(args, fmt.Sprintf("%s=127.0.0.1:%d", flag, local))
		}
	}
	if err := lp.tmpWebhookCertDir(); err != nil {
		return err
	}
	pod, _, _ := lp.state()
	for _, e := range c.Env {
		switch {
		case e.Name == "POD_NAMESPACE":
		case e.ValueFrom == nil:
			lp.env = append(lp.env, e.Name+"="+e.Value)
		default:
			lp.logf("environment variable %s from %v not passed on", e.Name, e.ValueFrom)
		}
	}
	lp.env = append(lp.env, "POD_NAMESPACE="+pod.Namespace, "KUBECONFIG="+filepath.Join(lp.dir, "kubeconfig"))
	lp.args = args
	return nil
}

// splitPort is the port of a listen address "host:port" or ":port".
func splitPort(addr string) (host string, port int32, err error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("address %q has no port", addr)
	}
	n, err := strconv.Atoi(addr[i+1:])
	return addr[:i], int32(n), err
}

// kserveAnswers dry-run creates an InferenceService whose name KServe's
// validating webhook refuses (it must start with a letter; the API server
// takes it): a denial is an answer.
func kserveAnswers(ctx context.Context, client dynamic.Interface) error {
	isvc := map[string]any{
		"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
		"metadata": map[string]any{"name": "0-testenv-probe", "namespace": "default"},
		"spec": map[string]any{"predictor": map[string]any{
			"model": map[string]any{"modelFormat": map[string]any{"name": "sklearn"}, "storageUri": "pvc://probe/model"},
		}},
	}
	return dryRunAnswered(ctx, client, schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}, isvc)
}
