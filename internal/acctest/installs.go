package acctest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// What install tests share: the charts they install offline and the
// machine-wide resources they wait for.

// KubeRayChart assembles the stand-in KubeRay chart in a temporary
// directory: this repository's testdata/charts/kuberay-operator (the
// operator's Deployment, RBAC and Service) plus KubeRay's own CRDs, copied
// from the ray-operator module at the default version (never committed to
// this repository).
func KubeRayChart(t *testing.T) string { return KubeRayChartAt(t, podrunner.KubeRayVersion) }

// KubeRayChartAt is the stand-in chart at another KubeRay version (a
// module version, "v1.5.0"): the CRDs of that version, the chart's version
// and the operator's image tag set to it (the pod runner runs the operator
// of the tag).
func KubeRayChartAt(t *testing.T, version string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := testenv.ModuleDir(context.Background(), podrunner.KubeRayModule, version)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "kuberay-operator")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "testdata", "charts", "kuberay-operator"))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "crds"), os.DirFS(filepath.Join(mod, "config", "crd", "bases"))); err != nil {
		t.Fatal(err)
	}
	if version != podrunner.KubeRayVersion {
		for file, from := range map[string]string{
			"Chart.yaml":  "(?m)^(version: |appVersion: v)" + regexp.QuoteMeta(strings.TrimPrefix(podrunner.KubeRayVersion, "v")) + "$",
			"values.yaml": "(?m)^(  tag: v)" + regexp.QuoteMeta(strings.TrimPrefix(podrunner.KubeRayVersion, "v")) + "$",
		} {
			path := filepath.Join(dir, file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(from)
			if !re.Match(data) {
				t.Fatalf("the stand-in chart's %s does not name KubeRay %s", file, podrunner.KubeRayVersion)
			}
			data = re.ReplaceAll(data, []byte("${1}"+strings.TrimPrefix(version, "v")))
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// AwaitMPIOperatorPort waits until this test may run an MPI Operator, and
// holds the turn until the test ends: the operator serves /healthz on the
// fixed port :8080 of all interfaces, so one runs per machine, and other
// test packages that go test runs at the same time (internal/resources/
// installs and training, testenv, the fabric and install examples) run
// theirs. The turn is testenv's machine lock podrunner.MPIOperatorLock,
// which the pod runner holds too while an operator's pod runs. This is a
// wait for a shared resource, not an assertion.
func AwaitMPIOperatorPort(t *testing.T) {
	t.Helper()
	const bound = 20 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	release, err := process.MachineLock(ctx, podrunner.MPIOperatorLock, func(m string) { t.Log(m) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}

// DriftBefore checks the prior state's drift in the plan: the lines the
// refresh found, each matched by a substring.
type DriftBefore struct {
	Addr string
	Want []string
}

func (c DriftBefore) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.Addr {
			continue
		}
		before, _ := rc.Change.Before.(map[string]any)
		lines, _ := before["drift"].([]any)
		text := fmt.Sprint(lines)
		for _, w := range c.Want {
			if !strings.Contains(text, w) {
				resp.Error = fmt.Errorf("%s: drift %s lacks %q", c.Addr, text, w)
				return
			}
		}
		after, _ := rc.Change.After.(map[string]any)
		if l, ok := after["drift"].([]any); !ok || len(l) != 0 {
			resp.Error = fmt.Errorf("%s: planned drift %v, want []", c.Addr, after["drift"])
		}
		return
	}
	resp.Error = fmt.Errorf("%s not in the plan", c.Addr)
}
