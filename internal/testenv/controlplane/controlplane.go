// Package controlplane runs the control plane of a local cluster as
// processes on loopback: etcd, kube-apiserver and, for scheduling,
// kube-controller-manager and kube-scheduler; and writes kubeconfigs.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/pki"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// Versions of the components, built in tools/: they must match the versions
// required by tools/go.mod (testenv's TestToolsVersions checks it).
const (
	KubernetesVersion = "v1.36.3"
	EtcdVersion       = "v3.6.16"
)

// Names of the components' processes and binaries.
const (
	APIServer         = "kube-apiserver"
	Etcd              = "etcd"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
)

// Specs are how the components are built: with `go build` in <repo>/tools,
// the Kubernetes version stamped in (see versionLDFlags).
var (
	EtcdSpec              = binaries.Spec{Name: Etcd, Version: EtcdVersion, Package: "./etcd", ColdBuild: "~1 min"}
	APIServerSpec         = kubeSpec(APIServer, "~5 min")
	ControllerManagerSpec = kubeSpec(ControllerManager, "~1-2 min")
	SchedulerSpec         = kubeSpec(Scheduler, "~1-2 min")
)

func kubeSpec(name, cold string) binaries.Spec {
	return binaries.Spec{Name: name, Version: KubernetesVersion, Package: "k8s.io/kubernetes/cmd/" + name, LDFlags: versionLDFlags(), ColdBuild: cold}
}

// versionLDFlags stamps the Kubernetes version into the binaries; unstamped,
// /version reports v0.0.0-master and version-checking clients (Kueue, Helm chart
// kubeVersion constraints) refuse the cluster.
func versionLDFlags() string {
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")[1]
	return strings.Join([]string{
		"-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion,
		"-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/component-base/version.gitTreeState=clean",
		"-X k8s.io/client-go/pkg/version.gitVersion=" + KubernetesVersion,
	}, " ")
}

// DefaultControllers are the kube-controller-manager controllers testenv runs:
// enough for Jobs, Deployments and StatefulSets to create pods, for namespaces
// and owned objects to be deleted, and for new nodes to lose the not-ready taint
// (node-lifecycle-controller; without it pods stay Pending).
var DefaultControllers = []string{
	"job-controller",
	"garbage-collector-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"node-lifecycle-controller",
	"namespace-controller",
	"pod-garbage-collector-controller",
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"root-ca-certificate-publisher-controller",
	"ttl-after-finished-controller",
	// PersistentVolumeClaims bind (with testenv's storage provisioner) and
	// can be deleted (the protection controllers remove their finalizers).
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	// Aggregated ClusterRoles (Kueue's batch-admin and batch-user roles, the
	// MPI Operator's kubeflow-mpijobs-admin) get their sources' rules, as in
	// every real cluster — and an uninstall meets its re-creation of an
	// aggregated role deleted with its sources (kube.WaitGone).
	"clusterrole-aggregation-controller",
}

// Ports are the loopback ports of the components.
type Ports struct {
	EtcdClient, EtcdPeer, APIServer, ControllerManager, Scheduler int
}

// ControlPlane is the control plane of one local cluster.
type ControlPlane struct {
	Dir   string // state: <Dir>/etcd, certificates in <Dir>/pki
	PKI   *pki.PKI
	Procs *process.Group
	Bins  binaries.Paths
	Ports Ports

	// APIServerArgs are appended to kube-apiserver's flags.
	APIServerArgs []string
	// Controllers are kube-controller-manager's --controllers (default
	// DefaultControllers).
	Controllers []string
	// NodeMonitorGracePeriod is how long nodes stay Ready without a lease
	// renewal; it must outlast kwok's lease.
	NodeMonitorGracePeriod time.Duration
	Timeout                time.Duration
	Logf                   func(format string, args ...any)
}

// Host is the API server's URL, https://127.0.0.1:<port>.
func (c *ControlPlane) Host() string { return fmt.Sprintf("https://127.0.0.1:%d", c.Ports.APIServer) }

// Kubeconfig is the admin kubeconfig, <Dir>/kubeconfig.
func (c *ControlPlane) Kubeconfig() string { return filepath.Join(c.Dir, "kubeconfig") }

func (c *ControlPlane) wait(ctx context.Context, p *process.Proc, url string, client *http.Client) error {
	return process.WaitHTTP(ctx, p, url, client, c.Timeout, c.Procs.LogPath(p.Name))
}

// StartEtcd starts etcd and waits until it is healthy.
func (c *ControlPlane) StartEtcd(ctx context.Context) error {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.EtcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.EtcdPeer)
	t := time.Now()
	p, err := c.Procs.Start(Etcd, c.Bins[Etcd], []string{
		"--name=testenv",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=testenv=" + peer,
		"--unsafe-no-fsync", // test data: durability is not worth the latency
		"--log-level=warn",
	})
	if err != nil {
		return err
	}
	if err := c.wait(ctx, p, client+"/health", &http.Client{Timeout: 2 * time.Second}); err != nil {
		return err
	}
	c.Logf("etcd %s ready (%s)", EtcdVersion, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// StopAPIServer stops kube-apiserver only (etcd and the other components keep
// running), for tests of how clients behave while it is down.
func (c *ControlPlane) StopAPIServer() error {
	p := c.Procs.Find(APIServer)
	if p == nil {
		return errors.New("testenv: kube-apiserver is not running")
	}
	p.Stop()
	return nil
}

// StartAPIServer starts kube-apiserver, on the same port with the same flags
// after StopAPIServer, and waits until /readyz is ok.
func (c *ControlPlane) StartAPIServer(ctx context.Context) error {
	if p := c.Procs.Find(APIServer); p != nil && !p.Exited() {
		return errors.New("testenv: kube-apiserver is already running")
	}
	t := time.Now()
	p, err := c.Procs.Start(APIServer, c.Bins[APIServer], c.apiServerArgs())
	if err != nil {
		return err
	}
	if err := c.wait(ctx, p, c.Host()+"/readyz", HTTPClient(c.PKI.CAPEM, c.PKI.Token)); err != nil {
		return err
	}
	c.Logf("kube-apiserver %s ready at %s (%s)", KubernetesVersion, c.Host(), time.Since(t).Round(10*time.Millisecond))
	return nil
}

// HTTPClient trusts the cluster CA and, when token is set, sends it.
func HTTPClient(ca []byte, token string) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	var rt http.RoundTripper = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
	if token != "" {
		rt = bearer{token, rt}
	}
	return &http.Client{Transport: rt, Timeout: 2 * time.Second}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// WriteKubeconfig writes a kubeconfig with one context, "testenv".
func WriteKubeconfig(path, host string, ca []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "admin"}
	cfg.CurrentContext = "testenv"
	return clientcmd.WriteToFile(*cfg, path)
}
