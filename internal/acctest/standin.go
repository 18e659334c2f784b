package acctest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A `moved` block from another provider's resource needs that provider
// startable: Terraform 1.11 refuses to plan a state naming
// registry.terraform.io/hashicorp/kubernetes when the provider is not
// installed ("Missing required provider"), and tests cannot download it.
// The stand-in (testdata/standin) serves the source schemas under the
// hashicorp addresses through dev_overrides.

var (
	standinOnce sync.Once
	standinDir  string
	standinErr  error
)

// UseSourceProviders adds dev_overrides for hashicorp/kubernetes and
// hashicorp/helm, served by the stand-in, to w's CLI configuration.
func UseSourceProviders(t *testing.T, w *Workspace) {
	t.Helper()
	standinOnce.Do(func() {
		var outs []string
		outs, standinErr = BuildInRepo(buildLock,
			RepoBuild{Module: ".", Pkg: "./internal/acctest/testdata/standin", Out: "bin/acctest-standin/kubernetes/terraform-provider-kubernetes"},
			RepoBuild{Module: ".", Pkg: "./internal/acctest/testdata/standin", Out: "bin/acctest-standin/helm/terraform-provider-helm"})
		if standinErr == nil {
			standinDir = filepath.Dir(filepath.Dir(outs[0]))
		}
	})
	if standinErr != nil {
		t.Fatal(standinErr)
	}
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"aiplatform/aiplatform\" = %q\n    \"hashicorp/kubernetes\" = %q\n    \"hashicorp/helm\" = %q\n  }\n  direct {}\n}\n",
		binDir, filepath.Join(standinDir, "kubernetes"), filepath.Join(standinDir, "helm"))
	if err := os.WriteFile(w.cliConfig, []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteState writes a terraform.tfstate (version 4) into w holding the
// given resources (each a JSON object of the state's "resources" list).
func WriteState(t *testing.T, w *Workspace, resources ...string) {
	t.Helper()
	body := `{"version":4,"terraform_version":"1.11.4","serial":1,"lineage":"6d1f0f7e-0a47-4a5e-9a57-acc7e5700001","outputs":{},"resources":[`
	for i, r := range resources {
		if i > 0 {
			body += ","
		}
		body += r
	}
	body += "]}\n"
	if err := os.WriteFile(filepath.Join(w.dir, "terraform.tfstate"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
