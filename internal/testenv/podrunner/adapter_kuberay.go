package podrunner

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// KubeRay's operator module and the version testenv builds and runs.
var (
	KubeRayModule  = catalog.KubeRay.Module
	KubeRayVersion = catalog.ModuleVersion(catalog.KubeRay.DefaultVersion)
	// KubeRayPreviousVersion is the previous default, run for the upgrade
	// from it: a pod whose image is tagged with it runs it.
	KubeRayPreviousVersion = "v1.5.0"
)

// kubeRaySpec is the KubeRay operator of a version (it requires
// controller-runtime v0.22): built in dir, a module of the repository that
// requires that version (tools/cr-v0.22, tools/kuberay-v1.5), or alone in
// the module's directory when dir is "" (main.go is at the module root).
func kubeRaySpec(version, dir, cold string) binaries.Spec {
	return binaries.Spec{Name: "kuberay-operator", Version: version, Module: KubeRayModule, Package: ".", Dir: dir, ColdBuild: cold}
}

// KubeRay runs the KubeRay operator of a pod from KubeRay's chart (or
// this repository's stand-in, testdata/charts/kuberay-operator): image
// quay.io/kuberay/operator (docker.io/kuberay/operator too), run with the
// testenv-built operator (KubeRayVersion) and the container's own flags, or
// its --config file (with one, the operator ignores its other flags).
//
// What changes, and why:
//   - metrics and health probe listen on free loopback ports instead of
//     :8080 and :8082; the runner probes the container's readinessProbe (the
//     upstream chart's is /metrics on port 8080) on the moved port;
//   - with leader election on (the operator's default) and no
//     --leader-election-namespace, the pod's namespace: controller-runtime
//     would read it from the fixed in-pod path
//     /var/run/secrets/kubernetes.io/serviceaccount/namespace;
//   - --log-file-path, when set, is a file in the pod's directory;
//   - --kubeconfig with the pod's service account token (in a pod:
//     in-cluster configuration), so the operator works with the chart's RBAC.
//
// KubeRay (v1.5, v1.6) serves its webhook only when the container's environment sets
// ENABLE_WEBHOOKS=true, which the runner does not pass on (the process gets
// the runner's environment); port 9443 is then reported as not served. The
// operator's other servers are off by default.
var KubeRay = &Adapter{
	Name:       "kuberay",
	Binary:     kubeRaySpec(KubeRayVersion, binaries.CR022, "~1 min with tools/cr-v0.22 built, ~2-6 alone"),
	Alternates: []binaries.Spec{kubeRaySpec(KubeRayPreviousVersion, binaries.KubeRay15, "~20 s with tools/cr-v0.22 built, ~2-6 min alone")},
	Image:      regexp.MustCompile(`^((docker\.io/)?kuberay|quay\.io/kuberay)/operator[:@]`),
	Prepare:    prepareKubeRayPod,
	Install: Install{
		Chart:     Source{Dir: "testdata/charts/kuberay-operator"}, // the stand-in; its CRDs from the module
		CRDs:      Source{Module: KubeRayModule, Version: KubeRayVersion, Dir: "config/crd/bases"},
		Namespace: catalog.KubeRay.Namespace, Release: "kuberay", Serves: catalog.KubeRay.Serves,
	},
}

func prepareKubeRayPod(lp *localPod) error {
	c := lp.container
	for _, e := range c.Env {
		if e.Name == "ENABLE_WEBHOOKS" && e.Value == "true" {
			lp.unserved[9443] = "the pod runner does not pass the container's ENABLE_WEBHOOKS=true on: KubeRay's webhook is off"
		}
	}
	pod, _, _ := lp.state()
	args := slices.Clone(c.Args)
	free, err := process.FreePorts(2)
	if err != nil {
		return err
	}
	cfg, configAt, err := lp.configArg(args)
	if err != nil {
		return err
	}
	if configAt >= 0 {
		for _, m := range []struct {
			key, def string
			local    int
		}{{"metricsAddr", ":8080", free[0]}, {"probeAddr", ":8082", free[1]}} {
			if err := lp.moveConfigAddr(cfg, m.key, m.def, m.local); err != nil {
				return err
			}
		}
		if elect, ok := cfg["enableLeaderElection"].(bool); !ok || elect {
			if ns, _ := cfg["leaderElectionNamespace"].(string); ns == "" {
				cfg["leaderElectionNamespace"] = pod.Namespace
			}
		}
		if f, _ := cfg["logFile"].(string); f != "" {
			cfg["logFile"] = filepath.Join(lp.dir, filepath.Base(f))
		}
		if err := lp.writeConfig(cfg, args, configAt, "config.yaml"); err != nil {
			return err
		}
		lp.args = append(args, "--kubeconfig="+filepath.Join(lp.dir, "kubeconfig"))
		return nil
	}

	// Flags: the last of a repeated flag wins, as with Go's flag package.
	value := func(flag, def string) (string, bool) {
		v, set := def, false
		for _, a := range args {
			if s, ok := strings.CutPrefix(a, flag+"="); ok {
				v, set = s, true
			}
		}
		return v, set
	}
	for _, m := range []struct {
		flag, def string
		local     int
	}{{"--metrics-addr", ":8080", free[0]}, {"--health-probe-bind-address", ":8082", free[1]}} {
		if _, set := value(m.flag, ""); set {
			if err := lp.moveFlag(args, m.flag, m.local); err != nil {
				return err
			}
			continue
		}
		moved, err := lp.moveAddr(m.def, m.local)
		if err != nil {
			return err
		}
		args = append(args, m.flag+"="+moved)
	}
	if elect, _ := value("--enable-leader-election", "true"); elect != "false" {
		if ns, _ := value("--leader-election-namespace", ""); ns == "" {
			args = append(args, "--leader-election-namespace="+pod.Namespace)
		}
	}
	for i, a := range args {
		if f, ok := strings.CutPrefix(a, "--log-file-path="); ok && f != "" {
			args[i] = "--log-file-path=" + filepath.Join(lp.dir, filepath.Base(f))
		}
	}
	lp.args = append(args, "--kubeconfig="+filepath.Join(lp.dir, "kubeconfig"))
	return nil
}
