package reliability_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func kueueCRDs() []string {
	if os.Getenv("TF_ACC") == "" {
		return nil
	}
	var dirs []string
	for _, crds := range []func(context.Context) (string, error){testenv.KueueCRDDir, testenv.KubeRayCRDDir, testenv.LWSCRDDir} {
		dir, err := crds(context.Background())
		if err != nil {
			panic(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

var priorityClasses = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloadpriorityclasses"}

// countPriorityClasses counts the live objects named fault-*.
func countPriorityClasses(env *testenv.Env) (int, error) {
	list, err := env.Dynamic.Resource(priorityClasses).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range list.Items {
		if strings.HasPrefix(o.GetName(), "fault-") {
			n++
		}
	}
	return n, nil
}

// The API server stops in the middle of an apply of 40 objects: the apply
// fails in bounded time with an error naming the server; once it is back,
// the same apply converges with no duplicates or orphans and an empty plan.
func TestAccAPIServerStoppedMidApply(t *testing.T) {
	env := acctest.Env(t)
	if env.External {
		t.Skip("needs a cluster testenv started: it stops and restarts the API server")
	}
	// Answers held back 150 ms each (a loopback proxy) so the apply is still
	// under way when the API server goes: an apply of 40 objects on loopback
	// is otherwise done before the server has finished stopping.
	proxy, err := env.NewFaultProxy()
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	proxy.SetDelay(150 * time.Millisecond)
	config := acctest.RequiredProviders + fmt.Sprintf("provider \"aiplatform\" {\n  config_path = %q\n}\n", proxy.Kubeconfig) + `
resource "aiplatform_workload_priority_class" "p" {
  count = 40
  name  = "fault-${count.index}"
  value = count.index
}
`
	var stoppedAt time.Time
	stopped := make(chan error, 1) // the stopper's result; step 2 waits for it
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					go func() {
						deadline := time.Now().Add(60 * time.Second)
						for time.Now().Before(deadline) {
							if n, err := countPriorityClasses(env); err == nil && n >= 5 {
								stoppedAt = time.Now()
								stopped <- env.StopAPIServer()
								return
							}
							time.Sleep(20 * time.Millisecond)
						}
						stopped <- fmt.Errorf("fewer than 5 objects appeared in 60s")
					}()
				},
				Config:      config,
				ExpectError: acctest.ErrorMatching("cannot reach the Kubernetes API server at " + proxy.Host),
			},
			{
				PreConfig: func() {
					t.Logf("apply failed %s after the API server began to stop", time.Since(stoppedAt).Round(time.Millisecond))
					if err := <-stopped; err != nil {
						t.Fatalf("stopping the API server: %v", err)
					}
					if err := env.StartAPIServer(context.Background()); err != nil {
						t.Fatal(err)
					}
					proxy.SetDelay(0)
				},
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: func(*terraform.State) error {
					if n, err := countPriorityClasses(env); err != nil || n != 40 {
						return fmt.Errorf("after recovery: %d fault-* priority classes (want 40), err %v", n, err)
					}
					return nil
				},
			},
		},
		CheckDestroy: func(*terraform.State) error {
			if n, err := countPriorityClasses(env); err != nil || n != 0 {
				return fmt.Errorf("after destroy: %d fault-* priority classes left, err %v", n, err)
			}
			return nil
		},
	})
}

// A slow API server: every answer held back longer than request_timeout.
// The operation fails after about request_timeout, not never, and says so.
func TestAccSlowAPIServer(t *testing.T) {
	env := acctest.Env(t)
	proxy, err := env.NewFaultProxy()
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	proxy.SetDelay(5 * time.Second)
	cfg := func(timeout string) string {
		return acctest.RequiredProviders + fmt.Sprintf(`
provider "aiplatform" {
  config_path     = %q
  request_timeout = %q
}
resource "aiplatform_resource_flavor" "slow" {
  name = "slow"
}
`, proxy.Kubeconfig, timeout)
	}
	start := time.Now()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: cfg("1s"), ExpectError: acctest.ErrorMatching("timed out after 1s talking to the Kubernetes API server at " + proxy.Host)},
			{Config: cfg("soon"), PlanOnly: true, ExpectError: acctest.ErrorMatching(`request_timeout: "soon" is not a positive duration`)},
		},
	})
	if took := time.Since(start); took > 45*time.Second {
		t.Errorf("a 1s request timeout took %s to fail: something retries", took)
	}
	// Connections cut: fails fast, names the host.
	proxy.SetDelay(0)
	proxy.SetDrop(true)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps:                    []resource.TestStep{{Config: cfg("5s"), ExpectError: acctest.ErrorMatching("Kubernetes API server at " + proxy.Host)}},
	})
	if obj, _ := (acctest.Object{GVR: schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}, Name: "slow"}).Get(env); obj != nil {
		// The create may have reached the server before its answer was held
		// back; remove it so nothing is left behind.
		_ = env.Dynamic.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}).Delete(context.Background(), "slow", metav1.DeleteOptions{})
	}
}

// TLS verification is on unless insecure is set explicitly.
func TestAccTLSVerifiedByDefault(t *testing.T) {
	env := acctest.Env(t)
	cfg := func(extra string) string {
		return acctest.RequiredProviders + fmt.Sprintf(`
provider "aiplatform" {
  host  = %q
  token = %q
  %s
}
resource "aiplatform_workload_priority_class" "tls" {
  name  = "tls-check"
  value = 1
}
`, env.Host, env.Token, extra)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: cfg(""), ExpectError: acctest.ErrorMatching("x509: certificate signed by unknown authority")},
			{Config: cfg("insecure = true"), ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
	})
}
