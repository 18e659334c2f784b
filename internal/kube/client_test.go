package kube

import (
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

func TestRestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
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
			if rc.Host != c.host || rc.BearerToken != c.token || rc.Insecure != c.insecure {
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
