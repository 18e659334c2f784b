package installs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// The Kueue chart installed with Helm as hashicorp/helm's helm_release
// installs it, and recorded in a state as a helm_release, moves into
// aiplatform_kueue with a `moved` block: the plan adds, changes and destroys
// nothing, the refreshed state matches the configuration, and the release is
// neither upgraded (revision 1) nor are its objects written (resourceVersion
// of the manager Deployment and its configuration unchanged).
func TestAccMoveFromHelmRelease(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	rel := &helm.Release{Client: kube.NewClientFromREST(env.RESTConfig, false), Namespace: "kueue-system", Name: "kueue"}
	ch, err := helm.LoadChart(helm.Source{Path: kueueChart(t), Version: "0.17.0"})
	if err != nil {
		t.Fatal(err)
	}
	// What a helm_release with the default integrations written into the
	// chart's manager configuration installs.
	values, err := helm.KueueConfig{Frameworks: []string{"batch/job"}}.Values(ch.Values, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Install(ctx, helm.Options{Chart: ch, Values: values, Timeout: 3 * time.Minute}); err != nil {
		t.Fatalf("installing the chart as helm_release would: %v", err)
	}
	versions := map[string]string{}
	for _, o := range []acctest.Object{kueueDeployment, kueueConfig} {
		live, err := o.Get(env)
		if err != nil || live == nil {
			t.Fatalf("%s after install: %v", o.Name, err)
		}
		versions[o.Name] = live.GetResourceVersion()
	}

	w := acctest.NewWorkspace(t, env, "testdata/move")
	w.Env = append(w.Env, "TF_VAR_chart="+kueueChart(t))
	acctest.UseSourceProviders(t, w)
	acctest.WriteState(t, w, fmt.Sprintf(`{"mode":"managed","type":"helm_release","name":"kueue","provider":"provider[\"registry.terraform.io/hashicorp/helm\"]","instances":[{"schema_version":0,"attributes":{"id":"kueue","name":"kueue","namespace":"kueue-system","repository":null,"chart":%q,"version":"0.17.0","values":null,"status":"deployed"},"sensitive_attributes":[]}]}`,
		kueueChart(t)))

	out, err := w.Run("plan")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out)
	if !strings.Contains(out, "helm_release.kueue has moved to aiplatform_kueue.this") {
		t.Errorf("plan does not show the move:\n%s", out)
	}
	if !strings.Contains(out, "0 to add, 0 to change, 0 to destroy") {
		t.Fatalf("the move plans changes:\n%s", out)
	}
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after the move is not empty (exit %d):\n%s", code, out)
	}
	state, err := os.ReadFile(filepath.Join(w.Dir(), "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), "helm_release") || !strings.Contains(string(state), `"revision": 1`) {
		t.Errorf("state after the move: want aiplatform_kueue at revision 1 and no helm_release:\n%s", state)
	}
	cur, found, err := rel.Get(ctx)
	if err != nil || !found || cur.Version != 1 {
		t.Fatalf("release after the move: found %t, err %v, want revision 1", found, err)
	}
	for _, o := range []acctest.Object{kueueDeployment, kueueConfig} {
		live, err := o.Get(env)
		if err != nil || live == nil {
			t.Fatalf("%s after the move: %v", o.Name, err)
		}
		if live.GetResourceVersion() != versions[o.Name] {
			t.Errorf("%s was written by the move: resourceVersion %s → %s", o.Name, versions[o.Name], live.GetResourceVersion())
		}
	}
}
