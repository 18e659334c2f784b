package provider_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// otherCluster is an API server that no configuration names, as the
// operator's current kubeconfig context would be: it serves three GPU nodes
// and records every request it gets.
type otherCluster struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // method path user-agent
}

const otherNodes = `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[` +
	`{"metadata":{"name":"n1","labels":{"gpu":"h100"}},"status":{"conditions":[{"type":"Ready","status":"True"}],"allocatable":{"nvidia.com/gpu":"8"},"capacity":{"nvidia.com/gpu":"8"}}},` +
	`{"metadata":{"name":"n2","labels":{"gpu":"h100"}},"status":{"conditions":[{"type":"Ready","status":"True"}],"allocatable":{"nvidia.com/gpu":"8"},"capacity":{"nvidia.com/gpu":"8"}}},` +
	`{"metadata":{"name":"n3","labels":{"gpu":"h100"}},"status":{"conditions":[{"type":"Ready","status":"True"}],"allocatable":{"nvidia.com/gpu":"8"},"capacity":{"nvidia.com/gpu":"8"}}}]}`

func startOtherCluster(t *testing.T) *otherCluster {
	t.Helper()
	o := &otherCluster{}
	o.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.requests = append(o.requests, r.Method+" "+r.URL.Path+" "+r.UserAgent())
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/nodes"):
			fmt.Fprint(w, otherNodes)
		case strings.HasSuffix(r.URL.Path, "/pods"):
			fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *otherCluster) Requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.requests...)
}

// kubeconfig writes a kubeconfig for the other cluster.
func (o *otherCluster) kubeconfig(t *testing.T, path string) {
	t.Helper()
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: other
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: other
  user: {token: other-token}
contexts:
- name: other
  context: {cluster: other, user: other}
current-context: other
`, o.URL)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// asCurrentContext makes the other cluster what $KUBECONFIG and
// ~/.kube/config point at, and clears the provider's own variables.
func (o *otherCluster) asCurrentContext(t *testing.T) {
	home := t.TempDir()
	o.kubeconfig(t, filepath.Join(home, ".kube", "config"))
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, ".kube", "config"))
	for _, k := range []string{"KUBE_CONFIG_PATH", "KUBE_CONFIG_PATHS", "KUBE_CTX", "KUBE_HOST", "KUBE_TOKEN",
		"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"} {
		t.Setenv(k, "")
	}
}

func (o *otherCluster) untouched(t *testing.T) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if r := o.Requests(); len(r) > 0 {
			return fmt.Errorf("the provider sent %d requests to the cluster of $KUBECONFIG / ~/.kube/config, which no configuration names: %v", len(r), r)
		}
		return nil
	}
}

const sizing = `
data "aiplatform_inference_sizing" "s" {
  params_billion = 70
  dtype          = "bf16"
  gpu_memory     = "80G"
  gpus_per_node  = 8
}
`

// Capacity planning before any cluster exists: an empty provider block, and
// no kubeconfig the provider may read ($KUBECONFIG and ~/.kube/config point
// at a cluster the configuration does not name, and are not read). A
// resource that needs the cluster says how to configure one.
func TestAccNoClusterConfigured(t *testing.T) {
	acctest.Env(t)
	other := startOtherCluster(t)
	other.asCurrentContext(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: acctest.RequiredProviders + `provider "aiplatform" {}` + sizing,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.aiplatform_inference_sizing.s", tfjsonpath.New("min_gpus"), knownvalue.Int64Exact(2)),
				},
				Check: other.untouched(t),
			},
			{
				Config:      acctest.RequiredProviders + `provider "aiplatform" {}` + sizing + flavor,
				ExpectError: acctest.ErrorMatching(`no Kubernetes cluster is configured for the aiplatform provider`, `config_path`, `KUBE_CONFIG_PATH`),
			},
			{
				Config: acctest.RequiredProviders + `provider "aiplatform" {}` + sizing + `
data "aiplatform_gpu_capacity" "c" {}
`,
				ExpectError: acctest.ErrorMatching(`no Kubernetes cluster is configured`),
			},
		},
	})
	if r := other.Requests(); len(r) > 0 {
		t.Fatalf("the provider read the cluster of $KUBECONFIG / ~/.kube/config: %v", r)
	}
}

// The cluster is created in the same apply: the provider's config_path is
// known only after apply. The plan must not fall back to $KUBECONFIG or
// ~/.kube/config (the other cluster, with three GPU nodes): the node pool's
// live-derived values stay unknown, and the other cluster gets no request.
// The apply then uses the cluster that was named.
func TestAccUnknownConnectionNeverFallsBack(t *testing.T) {
	env := acctest.Env(t)
	other := startOtherCluster(t)
	other.asCurrentContext(t)
	for _, c := range []struct{ name, input, provider string }{
		{"config_path", env.Kubeconfig, `config_path = terraform_data.cluster.output`},
		{"host", env.Host, fmt.Sprintf("host = terraform_data.cluster.output\n  token = %q\n  cluster_ca_certificate = <<-EOT\n%sEOT", env.Token, env.CAData)},
	} {
		t.Run(c.name, func(t *testing.T) {
			config := acctest.RequiredProviders + fmt.Sprintf(`
resource "terraform_data" "cluster" {
  input = %q
}

provider "aiplatform" {
  %s
}

resource "aiplatform_gpu_node_pool" "p" {
  name     = "unknown-connection-%s"
  selector = { gpu = "h100" }
}
`, c.input, c.provider, strings.ReplaceAll(c.name, "_", "-"))
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps: []resource.TestStep{{
					Config: config,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectUnknownValue("aiplatform_gpu_node_pool.p", tfjsonpath.New("node_count")),
						plancheck.ExpectUnknownValue("aiplatform_gpu_node_pool.p", tfjsonpath.New("gpu_allocatable")),
					}},
					// Applied against the named cluster, which has no such nodes.
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue("aiplatform_gpu_node_pool.p", tfjsonpath.New("node_count"), knownvalue.Int64Exact(0)),
					},
					Check: other.untouched(t),
				}},
			})
		})
	}
	// A data source reads during plan, when the connection is not known yet:
	// it fails saying so, and reads nothing elsewhere.
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config: acctest.RequiredProviders + fmt.Sprintf(`
resource "terraform_data" "cluster" {
  input = %q
}

provider "aiplatform" {
  config_path = terraform_data.cluster.output
}

data "aiplatform_gpu_capacity" "c" {}
`, env.Kubeconfig),
			ExpectError: acctest.ErrorMatching(`connection (config_path) is known only after apply`),
		}},
	})
	if r := other.Requests(); len(r) > 0 {
		t.Fatalf("the provider read the cluster of $KUBECONFIG / ~/.kube/config: %v", r)
	}
}

// The hashicorp/kubernetes attributes: a kubeconfig merged from
// config_paths, the context's user and cluster picked by
// config_context_auth_info / config_context_cluster, and the provider's
// version in the User-Agent of its requests.
func TestAccKubernetesProviderAttributes(t *testing.T) {
	acctest.Env(t)
	other := startOtherCluster(t)
	other.asCurrentContext(t)
	dir := t.TempDir()
	other.kubeconfig(t, filepath.Join(dir, "other"))
	nowhere := filepath.Join(dir, "nowhere")
	if err := os.WriteFile(nowhere, []byte(`apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: other}
current-context: nowhere
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_CONFIG_PATHS", nowhere+string(os.PathListSeparator)+filepath.Join(dir, "other"))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: acctest.RequiredProviders + `
provider "aiplatform" {
  host = "https://127.0.0.1:1"
  exec {
    api_version = "client.authentication.k8s.io/v1"
  }
}
` + sizing,
				ExpectError: acctest.ErrorMatching(`Missing exec command`),
			},
			{
				Config: acctest.RequiredProviders + `
provider "aiplatform" {
  config_context_cluster = "other"
}

data "aiplatform_gpu_capacity" "c" {
  node_selector = { gpu = "h100" }
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.aiplatform_gpu_capacity.c", tfjsonpath.New("free_total"), knownvalue.Int64Exact(24)),
				},
			},
		},
	})
	reqs := other.Requests()
	if len(reqs) == 0 {
		t.Fatal("the cluster of config_paths + config_context_cluster got no request")
	}
	for _, r := range reqs {
		if !strings.Contains(r, " terraform-provider-aiplatform/test Terraform/") {
			t.Fatalf("request %q: the User-Agent does not name the provider's and Terraform's versions", r)
		}
	}
}
