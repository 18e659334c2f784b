// Package kserve_test applies the KServe examples with examples/rbac's
// least-privilege roles, on a cluster of their own where nothing is
// installed: the examples install KServe's charts (from the module cache,
// as internal/resources/installs does), whose controller pods the pod runner
// runs as KServe's real manager and LLMInferenceService controller, so that
// the runtime and the preset meet KServe's webhooks, as
// examples/serving-kserve's.
package kserve_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// One 8 x H100 node with an H100 machine's CPUs and memory (the preset's
// 8-GPU pod fits one node) and a CPU node for KServe's controllers.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		APIServerArgs: acctest.AuditArgs(),
		PodRunner:     true,
		Adapters:      []*podrunner.Adapter{podrunner.KServe, podrunner.LLMISvc},
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559", CPU: "64", Memory: "512Gi"},
			{Name: "cpu", Count: 1},
		},
	})
}

// The KServe examples: apply, `plan -detailed-exitcode` exits 0, destroy.
// The aiplatform_kserve example runs with only its type's role (its chart
// from the module cache, the LLMInferenceService controller on, the CRDs
// removed at destroy); while it is installed, the runtime and preset
// examples run on it, each with only its own type's roles, as teams'
// workspaces do on the platform's KServe. Then examples/serving-kserve, which
// installs KServe itself, with the aggregated role. A refused request fails
// the test with the rule the role lacks.
func TestAccKServeWithLeastPrivilege(t *testing.T) {
	env := acctest.Env(t)
	aggregated := acctest.LeastPrivilegeKubeconfig(t, env)
	mod, err := testenv.ModuleDir(context.Background(), "github.com/kserve/kserve", "v0.20.0")
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(mod, "charts", "kserve-resources")

	t.Run("resources/aiplatform_kserve", func(t *testing.T) {
		start := time.Now()
		ex := "resources/aiplatform_kserve"
		tf := withLines(t, acctest.ExampleFragment(t, ex), "aiplatform_kserve",
			fmt.Sprintf("  chart                 = { path = %q }\n  remove_crds           = true\n  llm_inference_service = true", chart))
		src := acctest.FragmentWorkspace(t, tf)
		w := acctest.NewWorkspace(t, env, src)
		w.SetKubeconfig(acctest.IdentityFor(t, env, ex, src)) // the cleanup's destroy too
		run(t, w, "apply", "-auto-approve")
		run(t, w, "plan", "-detailed-exitcode")
		for _, ex := range []string{"resources/aiplatform_serving_runtime", "resources/aiplatform_llm_service_preset"} {
			t.Run(ex, func(t *testing.T) {
				src := acctest.FragmentWorkspace(t, acctest.ExampleFragment(t, ex))
				acctest.ApplyPlanDestroy(t, env, src, acctest.IdentityFor(t, env, ex, src))
			})
		}
		run(t, w, "destroy", "-auto-approve")
		t.Logf("TIMING: KServe installed, its runtime and preset examples run on it, destroyed in %s", time.Since(start).Round(100*time.Millisecond))
	})
	t.Run("serving-kserve", func(t *testing.T) {
		acctest.ApplyPlanDestroy(t, env, filepath.Join("..", "..", "serving-kserve"), aggregated, "TF_VAR_kserve_chart_path="+chart)
	})
}

// run runs a workspace command as acctest.ApplyPlanDestroy does: a refused
// request fails t with the rules the identity lacks.
func run(t *testing.T, w *acctest.Workspace, args ...string) {
	t.Helper()
	out, err := w.Run(args...)
	if err == nil {
		return
	}
	what := strings.Join(args, " ") + " failed"
	if args[0] == "plan" {
		what = "plan -detailed-exitcode did not exit 0 (2 means changes)"
	}
	if missing := acctest.MissingRules(out); len(missing) > 0 {
		t.Fatalf("%s: the identity lacks:\n  %s\n\n%v", what, strings.Join(missing, "\n  "), err)
	}
	t.Fatalf("%s: %v", what, err)
}

// withLines adds lines to the body of `resource "<typ>" "<name>" {`.
func withLines(t *testing.T, tf, typ, lines string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^resource "` + typ + `" "[a-z_]+" \{\n`)
	loc := re.FindStringIndex(tf)
	if loc == nil {
		t.Fatalf("no %s block in the example", typ)
	}
	return tf[:loc[1]] + lines + "\n" + tf[loc[1]:]
}
