package provider_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// A bare cluster: no Kueue CRDs, which is itself one of the cases.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}) }

const flavor = `
resource "aiplatform_resource_flavor" "f" {
  name = "f"
}
`

func TestAccMissingKueueCRDs(t *testing.T) {
	env := acctest.Env(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config:      acctest.Provider(env) + flavor,
			ExpectError: acctest.ErrorMatching(`the Kueue CRDs are not installed in this cluster: add aiplatform_kueue or install Kueue`),
		}},
	})
}

// host + token + cluster_ca_certificate instead of a kubeconfig, with TLS
// verified: the request reaches the server (which answers that Kueue is not
// installed), so authentication and verification worked.
func TestAccExplicitCredentials(t *testing.T) {
	env := acctest.Env(t)
	block := func(token string) string {
		return acctest.RequiredProviders + fmt.Sprintf(`
provider "aiplatform" {
  host                   = %q
  token                  = %q
  cluster_ca_certificate = <<-EOT
%sEOT
}
`, env.Host, token, env.CAData)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: block(env.Token) + flavor, ExpectError: acctest.ErrorMatching(`the Kueue CRDs are not installed`)},
			{Config: block("wrong-token") + flavor, ExpectError: acctest.ErrorMatching(`Unauthorized`)},
		},
	})
}

// An unreachable cluster fails the first operation that needs it with one
// diagnostic that names the host, quickly (nothing listens on port 1).
func TestAccUnreachableCluster(t *testing.T) {
	acctest.Env(t)
	start := time.Now()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config: acctest.RequiredProviders + `
provider "aiplatform" {
  host  = "https://127.0.0.1:1"
  token = "x"
}
` + flavor,
			ExpectError: acctest.ErrorMatching(`cannot reach the Kubernetes API server at https://127.0.0.1:1`),
		}},
	})
	t.Logf("failed after %s", time.Since(start).Round(time.Millisecond))
}

func TestAccBadConfigPath(t *testing.T) {
	acctest.Env(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config:      acctest.RequiredProviders + `provider "aiplatform" { config_path = "/nonexistent/kubeconfig" }` + flavor,
			ExpectError: acctest.ErrorMatching(`config_path "/nonexistent/kubeconfig"`, "no such file or directory"),
		}},
	})
}
