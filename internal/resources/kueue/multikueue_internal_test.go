package kueue

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
)

const goodKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: w
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: ZmFrZQ==
users:
- name: u
  user:
    token: abc
contexts:
- name: c
  context: {cluster: w, user: u}
current-context: c
`

func TestCheckKubeconfig(t *testing.T) {
	if err := checkKubeconfig([]byte(goodKubeconfig)); err != nil {
		t.Fatalf("a kubeconfig Kueue accepts was refused: %v", err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"certificate-authority-data: ZmFrZQ==", "certificate-authority: /etc/ca.crt", "certificate-authority file"},
		{"certificate-authority-data: ZmFrZQ==", "insecure-skip-tls-verify: true", "insecure-skip-tls-verify"},
		{"token: abc", "tokenFile: /t", "files"},
		{"token: abc", "client-certificate: /c\n    client-key: /k", "files"},
		{"token: abc", "username: a\n    password: b", "basic auth"},
		{"token: abc", "auth-provider: {name: gcp}", "auth-provider"},
		{"current-context: c", "current-context: d", `"d"`},
		{"context: {cluster: w, user: u}", "context: {cluster: x, user: u}", `cluster "x"`},
		{"server: https://127.0.0.1:6443", "server: http://127.0.0.1:6443", "not https"},
	} {
		err := checkKubeconfig([]byte(strings.Replace(goodKubeconfig, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: got %v, want an error with %q", c.from, c.to, err, c.want)
		}
	}
}

// A MultiKueueCluster goes down to v1beta1 and back unchanged.
func TestMultiKueueClusterV1beta1RoundTrip(t *testing.T) {
	v2 := map[string]any{"spec": map[string]any{"clusterSource": map[string]any{"kubeConfig": map[string]any{"locationType": "Secret", "location": "w"}}}}
	obj := map[string]any{"spec": map[string]any{"clusterSource": map[string]any{"kubeConfig": map[string]any{"locationType": "Secret", "location": "w"}}}}
	catalog.MultiKueueClusterV1beta1(obj, "v1beta1", true)
	if want := map[string]any{"spec": map[string]any{"kubeConfig": map[string]any{"locationType": "Secret", "location": "w"}}}; !reflect.DeepEqual(obj, want) {
		t.Fatalf("down: %v, want %v", obj, want)
	}
	catalog.MultiKueueClusterV1beta1(obj, "v1beta1", false)
	if !reflect.DeepEqual(obj, v2) {
		t.Fatalf("up: %v, want %v", obj, v2)
	}
}
