package podrunner

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// What the pod adapters share: reading the container's configuration file,
// moving listen addresses to free loopback ports, and writing the moved
// configuration for the local process.

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

// moveConfigAddr moves the listen address sec[key] (def when unset) to the
// loopback port local (see moveAddr) and writes the moved address back.
func (lp *localPod) moveConfigAddr(sec map[string]any, key, def string, local int) error {
	addr, _ := sec[key].(string)
	if addr == "" {
		addr = def
	}
	moved, err := lp.moveAddr(addr, local)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if moved != "" {
		sec[key] = moved
	}
	return nil
}

// inNamespace refuses a pod outside ns, the one namespace a controller can
// work in outside a pod: it reads its own namespace only from the in-pod
// service-account file and otherwise assumes ns (for its leases, and the
// Secret and Service its certificate management works with).
func (lp *localPod) inNamespace(product, version, ns string) error {
	if pod, _, _ := lp.state(); pod.Namespace != ns {
		return fmt.Errorf("%s %s reads its namespace only from the in-pod path /var/run/secrets/kubernetes.io/serviceaccount/namespace, else uses %s; run outside a pod it cannot work in namespace %s", product, version, ns, pod.Namespace)
	}
	return nil
}

// managerConfig returns a copy of the container's args and the configuration
// file its --config=<file> argument names (configArg), or, without one, the
// controller's defaults (a Configuration of apiVersion) written out as a new
// argument at configAt, so that its ports can be moved.
func (lp *localPod) managerConfig(apiVersion string) (cfg map[string]any, args []string, configAt int, err error) {
	args = slices.Clone(lp.container.Args)
	cfg, configAt, err = lp.configArg(args)
	if err != nil {
		return nil, nil, 0, err
	}
	if configAt < 0 {
		cfg = map[string]any{"apiVersion": apiVersion, "kind": "Configuration"}
		args = append(args, "")
		configAt = len(args) - 1
	}
	return cfg, args, configAt, nil
}

// moveProbeAndMetrics moves a controller-runtime manager's health probe
// (health.healthProbeBindAddress, default :8081) and metrics
// (metrics.bindAddress, default :8443) listeners to the loopback ports
// health and metrics, in the configuration and in the
// --health-probe-bind-address / --metrics-bind-address flags, which
// override it where args set them.
func (lp *localPod) moveProbeAndMetrics(cfg map[string]any, args []string, health, metrics int) error {
	for _, m := range []struct {
		section, key, flag, def string
		local                   int
	}{
		{"health", "healthProbeBindAddress", "--health-probe-bind-address", ":8081", health},
		{"metrics", "bindAddress", "--metrics-bind-address", ":8443", metrics},
	} {
		if err := lp.moveConfigAddr(configSection(cfg, m.section), m.key, m.def, m.local); err != nil {
			return err
		}
		if err := lp.moveFlag(args, m.flag, m.local); err != nil {
			return err
		}
	}
	return nil
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

// moveWebhookServer points a controller-runtime configuration's webhook
// server at the loopback port local (the Service's targetPort, default 9443,
// is mapped to it) and its certDir (default controller-runtime's
// /tmp/k8s-webhook-server/serving-certs) at the projected volume that holds
// it, or at a fresh directory when no volume does.
func (lp *localPod) moveWebhookServer(cfg map[string]any, local int) error {
	webhook := configSection(cfg, "webhook")
	webhookPort := int32(9443)
	if p, ok := webhook["port"].(float64); ok && p > 0 {
		webhookPort = int32(p)
	}
	lp.ports[webhookPort] = local
	webhook["host"], webhook["port"] = "127.0.0.1", local
	certDir, _ := webhook["certDir"].(string)
	if certDir == "" {
		certDir = "/tmp/k8s-webhook-server/serving-certs"
	}
	localCerts, ok := lp.localPath(certDir)
	if !ok {
		localCerts = filepath.Join(lp.dir, "certs")
		if err := os.MkdirAll(localCerts, 0o700); err != nil {
			return err
		}
	}
	webhook["certDir"] = localCerts
	return nil
}

// writeConfig writes cfg as <pod dir>/name and points args[configAt] at it.
func (lp *localPod) writeConfig(cfg map[string]any, args []string, configAt int, name string) error {
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	local := filepath.Join(lp.dir, name)
	if err := os.WriteFile(local, out, 0o600); err != nil {
		return err
	}
	args[configAt] = "--config=" + local
	return nil
}

// tmpWebhookCertDir serves controller-runtime's default webhook certDir,
// $TMPDIR/k8s-webhook-server/serving-certs, for a controller that has no
// setting for it: the process runs with TMPDIR=<pod dir>/tmp, in which that
// directory is a link to the projected volume mounted there (or to a fresh
// directory when none is).
func (lp *localPod) tmpWebhookCertDir() error {
	certs, ok := lp.localPath(webhookCertMount)
	if !ok {
		certs = filepath.Join(lp.dir, "certs")
		if err := os.MkdirAll(certs, 0o700); err != nil {
			return err
		}
		lp.mu.Lock()
		lp.mounts[webhookCertMount] = certs
		lp.mu.Unlock()
	}
	tmp := filepath.Join(lp.dir, "tmp")
	if err := os.MkdirAll(filepath.Join(tmp, "k8s-webhook-server"), 0o700); err != nil {
		return err
	}
	link := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	_ = os.Remove(link)
	if err := os.Symlink(certs, link); err != nil {
		return err
	}
	lp.env = append(lp.env, "TMPDIR="+tmp)
	return nil
}
