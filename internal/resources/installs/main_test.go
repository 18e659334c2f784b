package installs_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// One cluster for the package, with no Kueue and no Volcano: the tests
// install them. Two CPU nodes (kwok) run the charts' pods, so the readiness
// waits complete. There are no webhook servers (see PART B in
// internal/install's doc): Kueue objects are created only after the test
// removed the chart's webhook configurations.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Nodes: []testenv.NodePool{{Name: "cpu", Count: 2}}})
}

// kueueChart is charts/kueue of sigs.k8s.io/kueue v0.17.0 in the module cache.
func kueueChart(t *testing.T) string {
	t.Helper()
	dir, err := testenv.ModuleDir(context.Background(), "sigs.k8s.io/kueue", "v0.17.0")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "charts", "kueue")
}

// volcanoChart is the repository's stand-in for Volcano's chart.
func volcanoChart(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "testdata", "charts", "volcano")
}

func object(group, version, resource, namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, Namespace: namespace, Name: name}
}

var (
	kueueDeployment = object("apps", "v1", "deployments", "kueue-system", "kueue-controller-manager")
	kueueConfig     = object("", "v1", "configmaps", "kueue-system", "kueue-manager-config")
	volcanoSched    = object("apps", "v1", "deployments", "volcano-system", "volcano-scheduler")
	kueueCRD        = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "clusterqueues.kueue.x-k8s.io")
	volcanoCRD      = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "podgroups.scheduling.volcano.sh")
)

// kueueBlock is an aiplatform_kueue from the module's chart.
func kueueBlock(t *testing.T, extra string) string {
	return fmt.Sprintf(`
resource "aiplatform_kueue" "this" {
  chart   = { path = %q }
  timeout = "3m"
%s
}
`, kueueChart(t), extra)
}

func volcanoBlock(t *testing.T, extra string) string {
	return fmt.Sprintf(`
resource "aiplatform_volcano" "this" {
  chart       = { path = %q }
  timeout     = "3m"
  remove_crds = true
%s
}
`, volcanoChart(t), extra)
}

// neutralizeKueueWebhooks stands in for a running Kueue manager: without
// one the chart's webhooks (failurePolicy Fail, a Service with no endpoints)
// refuse every Kueue object. Until restore is called it sets every Kueue
// webhook's failurePolicy to Ignore as soon as the configurations appear
// (deleting them instead would hold up the install's readiness wait);
// restore puts the chart's policies back, so that no drift remains.
func neutralizeKueueWebhooks(t *testing.T, env *testenv.Env) (restore func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ignore := admissionregistrationv1.Ignore
	var mu sync.Mutex
	original := map[string]admissionregistrationv1.FailurePolicyType{} // kind/webhook → chart's policy
	ar := env.Client.AdmissionregistrationV1()
	const mutating, validating = "kueue-mutating-webhook-configuration", "kueue-validating-webhook-configuration"
	neutralize := func(kind string, policies []*admissionregistrationv1.FailurePolicyType, names []string) bool {
		mu.Lock()
		defer mu.Unlock()
		changed := false
		for i, p := range policies {
			if *p != ignore {
				original[kind+"/"+names[i]] = *p
				*p, changed = ignore, true
			}
		}
		return changed
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if m, err := ar.MutatingWebhookConfigurations().Get(ctx, mutating, metav1.GetOptions{}); err == nil {
				var ps []*admissionregistrationv1.FailurePolicyType
				var names []string
				for i := range m.Webhooks {
					ps, names = append(ps, m.Webhooks[i].FailurePolicy), append(names, m.Webhooks[i].Name)
				}
				if neutralize("m", ps, names) {
					_, _ = ar.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{FieldManager: "test"})
				}
			}
			if v, err := ar.ValidatingWebhookConfigurations().Get(ctx, validating, metav1.GetOptions{}); err == nil {
				var ps []*admissionregistrationv1.FailurePolicyType
				var names []string
				for i := range v.Webhooks {
					ps, names = append(ps, v.Webhooks[i].FailurePolicy), append(names, v.Webhooks[i].Name)
				}
				if neutralize("v", ps, names) {
					_, _ = ar.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{FieldManager: "test"})
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			bg := context.Background()
			if m, err := ar.MutatingWebhookConfigurations().Get(bg, mutating, metav1.GetOptions{}); err == nil {
				for i := range m.Webhooks {
					if p, ok := original["m/"+m.Webhooks[i].Name]; ok {
						m.Webhooks[i].FailurePolicy = &p
					}
				}
				if _, err := ar.MutatingWebhookConfigurations().Update(bg, m, metav1.UpdateOptions{FieldManager: "test"}); err != nil {
					t.Errorf("restoring Kueue's webhooks: %v", err)
				}
			}
			if v, err := ar.ValidatingWebhookConfigurations().Get(bg, validating, metav1.GetOptions{}); err == nil {
				for i := range v.Webhooks {
					if p, ok := original["v/"+v.Webhooks[i].Name]; ok {
						v.Webhooks[i].FailurePolicy = &p
					}
				}
				if _, err := ar.ValidatingWebhookConfigurations().Update(bg, v, metav1.UpdateOptions{FieldManager: "test"}); err != nil {
					t.Errorf("restoring Kueue's webhooks: %v", err)
				}
			}
		})
	}
}

// driftBefore checks the prior state's drift in the plan: the lines the
// refresh found, each matched by a substring.
type driftBefore struct {
	addr string
	want []string
}

func (c driftBefore) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.addr {
			continue
		}
		before, _ := rc.Change.Before.(map[string]any)
		lines, _ := before["drift"].([]any)
		text := fmt.Sprint(lines)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				resp.Error = fmt.Errorf("%s: drift %s lacks %q", c.addr, text, w)
				return
			}
		}
		after, _ := rc.Change.After.(map[string]any)
		if l, ok := after["drift"].([]any); !ok || len(l) != 0 {
			resp.Error = fmt.Errorf("%s: planned drift %v, want []", c.addr, after["drift"])
		}
		return
	}
	resp.Error = fmt.Errorf("%s not in the plan", c.addr)
}
