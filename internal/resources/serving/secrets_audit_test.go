package serving_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// The secrets audit (issue 16, item 5): a configuration with every
// credential-bearing input — the provider token, a checkpoint store's
// object-store credentials Secret, a pod template's env from a Secret key —
// applies, and neither the state file nor the plan JSON (terraform show
// -json of a saved plan) holds the token or any value of the Secret. The
// resources take credentials only by Secret reference, so the provider never
// has a credential to pass on, store or mark write-only; the token is
// provider configuration, which Terraform keeps out of the state — but a
// saved plan records input variables, sensitive ones included, so the
// token's variable must be ephemeral (testdata/secrets_audit/main.tf).
func TestAccSecretsNeverInStateOrPlan(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	values := map[string]string{
		"AWS_ACCESS_KEY_ID":     "AKIAAUDITMARKER0001",
		"AWS_SECRET_ACCESS_KEY": "audit-marker-secret-access-key-0002",
		"HF_TOKEN":              "hf_auditmarker0003",
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "audit-creds", Namespace: "default"}, StringData: values}
	if _, err := env.Client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Secrets("default").Delete(ctx, "audit-creds", metav1.DeleteOptions{}) })

	w := acctest.NewWorkspace(t, env, "testdata/secrets_audit")
	w.Env = []string{"TF_VAR_host=" + env.Host, "TF_VAR_token=" + env.Token, "TF_VAR_ca=" + string(env.CAData)}
	resources := `
resource "aiplatform_checkpoint_store" "bucket" {
  name      = "audit-ckpt"
  namespace = "default"
  kind      = "object_store"
  uri       = "s3://checkpoints/audit"
  endpoint  = "https://minio.storage.svc:9000"
  credentials_secret = {
    name = "audit-creds"
    keys = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
  }
}
` + strings.TrimPrefix(deployConfig(env, "audit-serve",
		`limits = { cpu = "4", memory = "32Gi" }`,
		`limits = { cpu = "4", memory = "32Gi" }
      env    = [{ name = "HF_TOKEN", value_from = { secret_key_ref = { name = "audit-creds", key = "HF_TOKEN" } } }]`,
		"replicas         = 2", "replicas         = 1"), acctest.Provider(env))
	if err := os.WriteFile(filepath.Join(w.Dir(), "resources.tf"), []byte(resources), 0o644); err != nil {
		t.Fatal(err)
	}

	if _, err := w.Run("plan", "-out=create.tfplan"); err != nil {
		t.Fatal(err)
	}
	createPlan, err := w.ShowJSON("create.tfplan")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Run("apply", "-auto-approve", "create.tfplan"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Run("plan", "-out=refresh.tfplan"); err != nil {
		t.Fatal(err)
	}
	refreshPlan, err := w.ShowJSON("refresh.tfplan")
	if err != nil {
		t.Fatal(err)
	}
	state, err := os.ReadFile(filepath.Join(w.Dir(), "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	// The audit proves something only if the references are there.
	for what, doc := range map[string]string{"state": string(state), "plan JSON": createPlan} {
		if !strings.Contains(doc, "audit-creds") || !strings.Contains(doc, "HF_TOKEN") {
			t.Fatalf("the %s does not hold the Secret references the audit is about:\n%s", what, doc)
		}
	}
	secrets := map[string]string{"provider token": env.Token}
	for k, v := range values {
		secrets["Secret key "+k] = v
	}
	for what, doc := range map[string]string{"state file": string(state), "plan JSON (create)": createPlan, "plan JSON (refresh)": refreshPlan} {
		for name, v := range secrets {
			if strings.Contains(doc, v) {
				t.Errorf("the %s holds the %s (in %s)", what, name, whereIn(doc, v))
			}
		}
	}
	t.Logf("%d bytes of state, %d + %d bytes of plan JSON: no token, no Secret value", len(state), len(createPlan), len(refreshPlan))
}

// whereIn names the top-level keys of a JSON document whose values hold v.
func whereIn(doc, v string) string {
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(doc), &top) != nil {
		return "not a JSON object"
	}
	var keys []string
	for k, raw := range top {
		if strings.Contains(string(raw), v) {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, ", ")
}
