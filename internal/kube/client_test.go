package kube

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func restForTest() *rest.Config { return &rest.Config{Host: "https://127.0.0.1:6443"} }

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:1111"}
- name: b
  cluster: {server: "https://127.0.0.1:2222"}
users:
- name: u
  user: {token: from-file}
contexts:
- name: ctx-a
  context: {cluster: a, user: u}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ctx-a
`

// A second file: its current context comes first when it is listed first,
// and its user "v" and cluster "c" can be picked by name.
const otherKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:5555"}
users:
- name: v
  user: {token: from-other}
contexts:
- name: ctx-c
  context: {cluster: c, user: u}
current-context: ctx-c
`

func TestRestConfig(t *testing.T) {
	// Neither may be read: a kubeconfig is read only when named.
	decoy := writeDecoyKubeconfigs(t)
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte(otherKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		cfg       Config
		host      string
		token     string
		insecure  bool
		errSubstr string
	}{
		{name: "current context", cfg: Config{ConfigPath: path}, host: "https://127.0.0.1:1111", token: "from-file"},
		{name: "named context", cfg: Config{ConfigPath: path, ConfigContext: "ctx-b"}, host: "https://127.0.0.1:2222", token: "from-file"},
		{name: "host and token override the file", cfg: Config{ConfigPath: path, Host: "https://127.0.0.1:3333", Token: "t"}, host: "https://127.0.0.1:3333", token: "t"},
		{name: "host alone needs no file", cfg: Config{Host: "https://127.0.0.1:4444", Token: "t", Insecure: true}, host: "https://127.0.0.1:4444", token: "t", insecure: true},
		{name: "missing file", cfg: Config{ConfigPath: "/nonexistent"}, errSubstr: `config_path "/nonexistent"`},
		{name: "unknown context", cfg: Config{ConfigPath: path, ConfigContext: "nope"}, errSubstr: "nope"},
		{name: "config_paths merged in order", cfg: Config{ConfigPaths: []string{other, path}}, host: "https://127.0.0.1:5555", token: "from-file"},
		{name: "context's user and cluster overridden", cfg: Config{ConfigPaths: []string{path, other}, ConfigContextAuthInfo: "v", ConfigContextCluster: "b"},
			host: "https://127.0.0.1:2222", token: "from-other"},
		{name: "missing file of config_paths", cfg: Config{ConfigPaths: []string{path, "/nonexistent"}}, errSubstr: `config_paths "/nonexistent"`},
		{name: "credentials alone name no cluster", cfg: Config{Token: "t"}, errSubstr: "no Kubernetes cluster is configured"},
		{name: "exec without command", cfg: Config{Host: "https://127.0.0.1:1", Exec: &ExecConfig{APIVersion: "client.authentication.k8s.io/v1"}}, errSubstr: "exec: command is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc, err := restConfig(c.cfg)
			if c.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), c.errSubstr) {
					t.Fatalf("error = %v, want %q", err, c.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rc.Host == decoy || rc.Host != c.host || rc.BearerToken != c.token || rc.Insecure != c.insecure {
				t.Fatalf("got host=%s token=%s insecure=%v", rc.Host, rc.BearerToken, rc.Insecure)
			}
			if rc.Timeout != DefaultTimeout {
				t.Fatalf("timeout = %v, want %v (requests must be bounded)", rc.Timeout, DefaultTimeout)
			}
		})
	}
}

func TestClientRaisesRateLimits(t *testing.T) {
	c := NewClientFromREST(&rest.Config{Host: "https://127.0.0.1:1"}, false)
	if c.rest.QPS != DefaultQPS || c.rest.Burst != DefaultBurst || c.rest.UserAgent != FieldManager {
		t.Fatalf("qps=%v burst=%v ua=%q", c.rest.QPS, c.rest.Burst, c.rest.UserAgent)
	}
}

// writeDecoyKubeconfigs points $KUBECONFIG and ~/.kube/config at a cluster
// no configuration names, and returns its host.
func writeDecoyKubeconfigs(t *testing.T) string {
	t.Helper()
	const host = "https://127.0.0.1:9999"
	body := strings.ReplaceAll(kubeconfig, "https://127.0.0.1:1111", host)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, ".kube", "config"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	return host
}

func TestNoImplicitKubeconfig(t *testing.T) {
	writeDecoyKubeconfigs(t)
	if _, err := restConfig(Config{}); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("empty config: error = %v, want ErrNotConfigured ($KUBECONFIG and ~/.kube/config must not be read)", err)
	}
	// A context alone names a context of no kubeconfig.
	if _, err := restConfig(Config{ConfigContext: "ctx-a"}); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("config_context alone: error = %v, want ErrNotConfigured", err)
	}
	// In a pod (the kubelet's variables set) with nothing configured: in-cluster
	// configuration, which fails here for want of the service account's files.
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "6443")
	if _, err := restConfig(Config{}); err == nil || !strings.Contains(err.Error(), "in-cluster configuration") {
		t.Fatalf("in a pod: error = %v, want the in-cluster configuration's", err)
	}
}

func TestConnectionAttributes(t *testing.T) {
	rc, err := restConfig(Config{Host: "https://127.0.0.1:6443", Username: "alice", Password: "pw",
		TLSServerName: "api.internal", ProxyURL: "http://127.0.0.1:3128"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Username != "alice" || rc.Password != "pw" || rc.TLSClientConfig.ServerName != "api.internal" || rc.Proxy == nil {
		t.Fatalf("got username=%q password set=%v server name=%q proxy set=%v", rc.Username, rc.Password != "", rc.TLSClientConfig.ServerName, rc.Proxy != nil)
	}
	u, err := rc.Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: "127.0.0.1:6443"}})
	if err != nil || u.String() != "http://127.0.0.1:3128" {
		t.Fatalf("proxy = %v, %v", u, err)
	}
}

func TestNotConfiguredMakesNoRequest(t *testing.T) {
	c := NotConfigured(ErrNotConfigured)
	if _, err := c.Nodes(context.Background()); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("Nodes: error = %v, want ErrNotConfigured", err)
	}
	if _, err := c.RESTClientGetter("default").ToRESTConfig(); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("Helm's REST config: error = %v, want ErrNotConfigured", err)
	}
	if _, err := c.RESTClientGetter("default").ToDiscoveryClient(); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("discovery: error = %v, want ErrNotConfigured", err)
	}
}

func TestUserAgent(t *testing.T) {
	c, err := NewClient(Config{Host: "https://127.0.0.1:1", UserAgent: "terraform-provider-aiplatform/1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	if c.rest.UserAgent != "terraform-provider-aiplatform/1.2.3" {
		t.Fatalf("user agent = %q", c.rest.UserAgent)
	}
}
