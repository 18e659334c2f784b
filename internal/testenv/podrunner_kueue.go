package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// kueueAdapter runs the Kueue manager of a pod from Kueue's chart (or its
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
var kueueAdapter = &podAdapter{
	name:      "kueue",
	component: Kueue,
	image:     regexp.MustCompile(`^(registry\.k8s\.io|us-central1-docker\.pkg\.dev/k8s-staging-images)/kueue/kueue[:@]`),
	prepare:   prepareKueuePod,
}

// kueueVisibilityPort is the manager's visibility server port (its
// --visibility-server-port default, the chart's containerPort "visibility").
const kueueVisibilityPort = 8082

func prepareKueuePod(lp *localPod) error {
	c := lp.container
	// v0.17.0 or the chart's staging tag release-0.17 match v0.17.0.
	minor := strings.Join(strings.SplitN(strings.TrimPrefix(KueueVersion, "v"), ".", 3)[:2], ".")
	if tag := c.Image[strings.LastIndexAny(c.Image, ":@")+1:]; !strings.Contains(tag, minor) {
		lp.logf("image tag %s, but testenv runs the Kueue manager %s", tag, KueueVersion)
	}
	args := slices.Clone(c.Args)
	configAt := -1
	for i, a := range args {
		if strings.HasPrefix(a, "--config=") {
			configAt = i
		}
	}
	if configAt < 0 {
		return fmt.Errorf("container %s has no --config=<file> argument", c.Name)
	}
	configPath := strings.TrimPrefix(args[configAt], "--config=")
	local, ok := lp.localPath(configPath)
	if !ok {
		return fmt.Errorf("--config %s is on no volume of the container", configPath)
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return fmt.Errorf("--config %s: %w", configPath, err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("--config %s: %w", configPath, err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	section := func(name string) map[string]any {
		m, _ := cfg[name].(map[string]any)
		if m == nil {
			m = map[string]any{}
			cfg[name] = m
		}
		return m
	}
	pod, _, _ := lp.state()
	if ns, _ := cfg["namespace"].(string); ns == "" {
		cfg["namespace"] = pod.Namespace
	}
	// controller-runtime, too, would read the lease's namespace from there.
	if election := section("leaderElection"); election["leaderElect"] == true {
		if ns, _ := election["resourceNamespace"].(string); ns == "" {
			election["resourceNamespace"] = pod.Namespace
		}
	}

	free, err := freePorts(4)
	if err != nil {
		return err
	}
	webhook := section("webhook")
	webhookPort := int32(9443)
	if p, ok := webhook["port"].(float64); ok && p > 0 {
		webhookPort = int32(p)
	}
	lp.ports[webhookPort] = free[0]
	webhook["host"], webhook["port"] = "127.0.0.1", free[0]
	certDir, _ := webhook["certDir"].(string)
	if certDir == "" {
		certDir = "/tmp/k8s-webhook-server/serving-certs" // Kueue's default
	}
	localCerts, ok := lp.localPath(certDir)
	if !ok {
		localCerts = filepath.Join(lp.dir, "certs")
		if err := os.MkdirAll(localCerts, 0o700); err != nil {
			return err
		}
	}
	webhook["certDir"] = localCerts

	move := func(sec map[string]any, key, def string, local int) error {
		addr, _ := sec[key].(string)
		if addr == "" {
			addr = def
		}
		if addr == "" || addr == "0" {
			return nil
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("%s %q: %w", key, addr, err)
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("%s %q: %w", key, addr, err)
		}
		lp.ports[int32(n)] = local
		sec[key] = fmt.Sprintf("127.0.0.1:%d", local)
		return nil
	}
	if err := move(section("health"), "healthProbeBindAddress", ":8081", free[1]); err != nil {
		return err
	}
	if err := move(section("metrics"), "bindAddress", ":8443", free[2]); err != nil {
		return err
	}
	if err := move(cfg, "pprofBindAddress", "", free[3]); err != nil {
		return err
	}
	lp.unserved[kueueVisibilityPort] = "Kueue's visibility server is off (VisibilityOnDemand=false): its certificate directory is the fixed path /visibility, which clusters on one machine would share"

	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	localConfig := filepath.Join(lp.dir, "controller_manager_config.yaml")
	if err := os.WriteFile(localConfig, out, 0o600); err != nil {
		return err
	}
	args[configAt] = "--config=" + localConfig

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
