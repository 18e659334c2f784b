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

// lwsAdapter runs the LeaderWorkerSet controller of a pod from LWS's chart
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
// The namespace cannot be moved: LWS v0.7 reads it only from the fixed
// in-pod path /var/run/secrets/kubernetes.io/serviceaccount/namespace and
// otherwise uses lws-system, for its leader election lease and for the
// Secret and Service its cert management works with (no flag or setting
// changes that). The chart's CRD, too, names lws-system for its conversion
// webhook. So the adapter runs LWS pods in lws-system only and reports any
// other namespace in the pod's status.
var lwsAdapter = &podAdapter{
	name:      "lws",
	component: LWS,
	image:     regexp.MustCompile(`^(registry\.k8s\.io|us-central1-docker\.pkg\.dev/k8s-staging-images)/lws/lws[:@]`),
	prepare:   prepareLWSPod,
}

// lwsNamespace is the namespace LWS uses outside a pod (its
// utils.GetOperatorNamespace).
const lwsNamespace = "lws-system"

func prepareLWSPod(lp *localPod) error {
	pod, _, _ := lp.state()
	if pod.Namespace != lwsNamespace {
		return fmt.Errorf("LWS %s reads its namespace only from the in-pod path /var/run/secrets/kubernetes.io/serviceaccount/namespace, else uses %s; run outside a pod it cannot work in namespace %s", LWSVersion, lwsNamespace, pod.Namespace)
	}
	args := slices.Clone(lp.container.Args)
	cfg, configAt, err := lp.configArg(args)
	if err != nil {
		return err
	}
	if configAt < 0 {
		// LWS's defaults, written out so the ports can be moved.
		cfg = map[string]any{"apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration"}
		args = append(args, "")
		configAt = len(args) - 1
	}

	free, err := freePorts(3)
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
	certDir, _ := webhook["certDir"].(string)
	if certDir == "" {
		certDir = "/tmp/k8s-webhook-server/serving-certs" // LWS's default
	}
	localCerts, ok := lp.localPath(certDir)
	if !ok {
		localCerts = filepath.Join(lp.dir, "certs")
		if err := os.MkdirAll(localCerts, 0o700); err != nil {
			return err
		}
	}
	webhook["certDir"] = localCerts

	// The deprecated flags override the configuration: moved where set.
	health, metrics := configSection(cfg, "health"), configSection(cfg, "metrics")
	for _, m := range []struct {
		sec       map[string]any
		key, flag string
		def       string
		local     int
	}{
		{health, "healthProbeBindAddress", "--health-probe-bind-address", ":8081", free[1]},
		{metrics, "bindAddress", "--metrics-bind-address", ":8443", free[2]},
	} {
		addr, _ := m.sec[m.key].(string)
		if addr == "" {
			addr = m.def
		}
		if moved, err := lp.moveAddr(addr, m.local); err != nil {
			return fmt.Errorf("%s: %w", m.key, err)
		} else if moved != "" {
			m.sec[m.key] = moved
		}
		if err := lp.moveFlag(args, m.flag, m.local); err != nil {
			return err
		}
	}

	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	localConfig := filepath.Join(lp.dir, "controller_manager_config.yaml")
	if err := os.WriteFile(localConfig, out, 0o600); err != nil {
		return err
	}
	args[configAt] = "--config=" + localConfig
	lp.args = append(args, "--kubeconfig="+filepath.Join(lp.dir, "kubeconfig"))
	return nil
}

// configArg reads the YAML file of the container's --config=<file> argument
// from the projected volumes; configAt is -1 when there is none.
func (lp *localPod) configArg(args []string) (cfg map[string]any, configAt int, err error) {
	configAt = -1
	for i, a := range args {
		if strings.HasPrefix(a, "--config=") {
			configAt = i
		}
	}
	if configAt < 0 {
		return nil, -1, nil
	}
	configPath := strings.TrimPrefix(args[configAt], "--config=")
	local, ok := lp.localPath(configPath)
	if !ok {
		return nil, 0, fmt.Errorf("--config %s is on no volume of the container", configPath)
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return nil, 0, fmt.Errorf("--config %s: %w", configPath, err)
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, 0, fmt.Errorf("--config %s: %w", configPath, err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	return cfg, configAt, nil
}

// configSection is cfg[name] as a map, created when missing.
func configSection(cfg map[string]any, name string) map[string]any {
	m, _ := cfg[name].(map[string]any)
	if m == nil {
		m = map[string]any{}
		cfg[name] = m
	}
	return m
}

// moveAddr maps the port of a listen address ("host:port", ":port") to the
// loopback port local and returns the moved address, or "" when addr turns
// the server off ("" or "0").
func (lp *localPod) moveAddr(addr string, local int) (string, error) {
	if addr == "" || addr == "0" {
		return "", nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	lp.ports[int32(n)] = local
	return fmt.Sprintf("127.0.0.1:%d", local), nil
}

// moveFlag rewrites every --<flag>=<address> argument in place to listen on
// the loopback port local (see moveAddr).
func (lp *localPod) moveFlag(args []string, flag string, local int) error {
	for i, a := range args {
		addr, ok := strings.CutPrefix(a, flag+"=")
		if !ok {
			continue
		}
		moved, err := lp.moveAddr(addr, local)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		if moved != "" {
			args[i] = flag + "=" + moved
		}
	}
	return nil
}
