package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/pki"
)

// apiServerArgs are kube-apiserver's flags; StartAPIServer reuses them as they
// are, so a restarted API server has the same port, keys and storage.
func (c *ControlPlane) apiServerArgs() []string {
	p := c.PKI
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", c.Ports.EtcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", c.Ports.APIServer),
		"--cert-dir=" + filepath.Join(c.Dir, "pki"),
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CACert,
		"--token-auth-file=" + p.TokenFile,
		// Front-proxy (request header) authentication, as in a real cluster:
		// for aggregated API servers, and so that the controller manager's and
		// scheduler's delegated authentication find a request-header CA in
		// kube-system/extension-apiserver-authentication instead of logging
		// errors about its absence.
		"--requestheader-client-ca-file=" + p.CACert,
		"--requestheader-allowed-names=" + pki.FrontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.ProxyCert,
		"--proxy-client-key-file=" + p.ProxyKey,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + p.SAPub,
		"--service-account-signing-key-file=" + p.SAKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// The "kubernetes" Service's endpoints would be 127.0.0.1, which
		// Endpoints validation rejects (loopback); nothing in the cluster could
		// use them anyway, there being no pod network.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		// On SIGTERM, answer 429 until in-flight requests are done, then close
		// the listener within 2 s. Without it the server waits for open watches
		// up to --request-timeout (60 s) before exiting.
		"--shutdown-send-retry-after=true",
		// The fake nodes' kubelet (pod logs) at their InternalIP, 127.0.0.1,
		// not their Hostname (the node's name, which resolves nowhere).
		"--kubelet-preferred-address-types=InternalIP",
	}
	return append(args, c.APIServerArgs...)
}

// StartScheduling starts kube-controller-manager and kube-scheduler with the
// admin kubeconfig, and returns the function that waits until both are
// healthy (so that the caller can start kwok in between, as before).
func (c *ControlPlane) StartScheduling(ctx context.Context) (wait func() error, _ error) {
	kc := c.Kubeconfig()
	common := []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--tls-cert-file=" + c.PKI.ServingCert,
		"--tls-private-key-file=" + c.PKI.ServingKey,
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	}
	controllers := c.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	kcm, err := c.Procs.Start(ControllerManager, c.Bins[ControllerManager], append([]string{
		fmt.Sprintf("--secure-port=%d", c.Ports.ControllerManager),
		"--controllers=" + strings.Join(controllers, ","),
		"--service-account-private-key-file=" + c.PKI.SAKey,
		"--root-ca-file=" + c.PKI.CACert,
		// Nodes are NotReady when their lease is older than this; it must
		// outlast kwok's lease (renewed at a quarter of its duration).
		fmt.Sprintf("--node-monitor-grace-period=%s", c.NodeMonitorGracePeriod),
	}, common...))
	if err != nil {
		return nil, err
	}
	sched, err := c.Procs.Start(Scheduler, c.Bins[Scheduler], append([]string{
		fmt.Sprintf("--secure-port=%d", c.Ports.Scheduler),
	}, common...))
	if err != nil {
		return nil, err
	}
	return func() error {
		// /healthz is always allowed without credentials on both components.
		https := HTTPClient(c.PKI.CAPEM, "")
		if err := c.wait(ctx, kcm, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.ControllerManager), https); err != nil {
			return err
		}
		return c.wait(ctx, sched, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.Scheduler), https)
	}, nil
}
