package serving_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The RayService tests run against the real KubeRay operator on the Ray
// tests' GPU pool (rayNodes). KubeRay turns a RayService into a RayCluster
// and runs its pods; it then submits the serve config to the cluster's
// dashboard, which kwok's pods do not serve, so the applications never
// become healthy and the cluster stays the pending one: what is asserted is
// the RayService as written and the RayCluster and pods KubeRay made of it.

func rayService(namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayservices"}, Namespace: namespace, Name: name}
}

const rayServeConfig = `applications:
- name: llm
  import_path: serve_app:app
  route_prefix: /
`

func rayServiceConfig(env *testenv.Env, serveConfig, extra string) string {
	return acctest.Provider(env, "force_conflicts = true") + fmt.Sprintf(`
resource "aiplatform_ray_service" "llm" {
  name         = "llm"
  namespace    = "default"
  ray_version  = "2.46.0"
  serve_config = %q
  head = {
    cpu              = "1"
    memory           = "2Gi"
    ray_start_params = { dashboard-host = "0.0.0.0" }
  }
  worker_groups = [{
    name          = "gpu"
    replicas      = 2
    min_replicas  = 1
    max_replicas  = 4
    cpu           = "4"
    memory        = "16Gi"
    gpus          = 4
    node_selector = { %s = %q }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }]
  upgrade_strategy               = { type = "NewCluster" }
  cluster_deletion_delay_seconds = 30
%s
}
`, serveConfig, rayPoolLabel, rayPool, extra)
}

// rayServiceCluster is the RayCluster the service serves from, as its state
// names it: the pending one, else the active one.
func rayServiceCluster(s *terraform.State, addr string) (string, error) {
	r, ok := s.RootModule().Resources[addr]
	if !ok {
		return "", fmt.Errorf("%s not in state", addr)
	}
	name := r.Primary.Attributes["pending_cluster_name"]
	if name == "" {
		name = r.Primary.Attributes["active_cluster_name"]
	}
	if name == "" {
		return "", fmt.Errorf("%s names no RayCluster (pending_cluster_name and active_cluster_name are empty)", addr)
	}
	return name, nil
}

// clusterOfService checks the live RayCluster KubeRay made for the service:
// ready, made from the service's groups, and its pods.
func clusterOfService(env *testenv.Env, addr, service string, workers int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		name, err := rayServiceCluster(s, addr)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(name, service+"-") {
			return fmt.Errorf("RayCluster %q is not named after RayService %q", name, service)
		}
		rc := rayCluster("default", name)
		for _, check := range []resource.TestCheckFunc{
			rc.Equal(env, "ready", "status", "state"),
			rc.Equal(env, "gpu", "spec", "workerGroupSpecs", "0", "groupName"),
			rc.Equal(env, int64(workers), "spec", "workerGroupSpecs", "0", "replicas"),
			rc.Equal(env, "rayproject/ray:2.46.0", "spec", "headGroupSpec", "template", "spec", "containers", "0", "image"),
			rc.Equal(env, "RayService", "metadata", "labels", "ray.io/originated-from-crd"),
			podsHave(env, "default", name, "head", podWant{count: 1}),
			podsHave(env, "default", name, "worker", podWant{count: workers, gpus: 4, toleration: "nvidia.com/gpu", selector: rayPoolLabel + "=" + rayPool}),
		} {
			if err := check(s); err != nil {
				return err
			}
		}
		return nil
	}
}

// A RayService judged by the real KubeRay operator: create waits until the
// RayCluster KubeRay makes of it is ready (head and two 4-GPU workers on the
// pool); empty plan; the serve config edited by hand is planned back and
// repaired; import with everything verified.
func TestAccRayService(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	addr := "aiplatform_ray_service.llm"
	rs := rayService("default", "llm")
	cfg := rayServiceConfig(env, rayServeConfig, "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/llm"),
					resource.TestCheckResourceAttr(addr, "serve_service_name", "llm-serve-svc"),
					resource.TestCheckResourceAttr(addr, "head_service_name", "llm-head-svc"),
					resource.TestCheckResourceAttr(addr, "dashboard_address", "llm-head-svc.default.svc:8265"),
					resource.TestCheckResourceAttr(addr, "application_names.#", "1"),
					resource.TestCheckResourceAttr(addr, "application_names.0", "llm"),
					rs.Equal(env, rayServeConfig, "spec", "serveConfigV2"),
					rs.Equal(env, "NewCluster", "spec", "upgradeStrategy", "type"),
					rs.Equal(env, int64(30), "spec", "rayClusterDeletionDelaySeconds"),
					rs.Equal(env, int64(4), "spec", "rayClusterConfig", "workerGroupSpecs", "0", "maxReplicas"),
					clusterOfService(env, addr, "llm", 2),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Edited by hand: the serve config and the deletion delay.
				PreConfig: func() {
					rs.Edit(t, env, "kubectl-edit", func(o map[string]any) {
						spec := o["spec"].(map[string]any)
						spec["serveConfigV2"] = strings.Replace(rayServeConfig, "serve_app:app", "edited:app", 1)
						spec["rayClusterDeletionDelaySeconds"] = int64(600)
					})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					rs.Equal(env, rayServeConfig, "spec", "serveConfigV2"),
					rs.Equal(env, int64(30), "spec", "rayClusterDeletionDelaySeconds"),
					clusterOfService(env, addr, "llm", 2),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateId: "default/llm", ImportStateVerify: true},
		},
		CheckDestroy: rs.Gone(env),
	})
}

// Deleted by hand: the plan creates it again and KubeRay makes a new cluster.
func TestAccRayServiceDeletedOutOfBand(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	addr := "aiplatform_ray_service.llm"
	rs := rayService("default", "llm")
	cfg := rayServiceConfig(env, rayServeConfig, "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: cfg, Check: clusterOfService(env, addr, "llm", 2)},
			{
				PreConfig: func() { rs.Delete(t, env) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					rs.Equal(env, rayServeConfig, "spec", "serveConfigV2"),
					clusterOfService(env, addr, "llm", 2),
				),
			},
		},
		CheckDestroy: rs.Gone(env),
	})
}

// Bad input is refused at plan time with the attribute's path, and nothing
// is created.
func TestAccRayServiceValidation(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	pool := fmt.Sprintf("node_selector = { %s = %q }", rayPoolLabel, rayPool)
	bad := func(name, serveConfig, group, extra string) string {
		return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_ray_service" "bad" {
  name          = %q
  namespace     = "default"
  ray_version   = "2.46.0"
  serve_config  = %q
  head          = {}
  worker_groups = [%s]
%s
}
`, name, serveConfig, group, extra)
	}
	okApps := rayServeConfig
	okGroup := `{ name = "w" }`
	cases := []struct {
		config, want string
	}{
		{bad("bad", "applications: [", okGroup, ""), `serve_config: not YAML`},
		{bad("bad", "- name: a\n  import_path: a:b\n", okGroup, ""), `serve_config: must be a YAML mapping with an applications list, not a list`},
		{bad("bad", "http_options:\n  port: 8000\n", okGroup, ""), `serve_config: has no applications list`},
		{bad("bad", "applications:\n- name: a\n  route_prefix: /\n", okGroup, ""), `serve_config: applications[0] has no import_path`},
		{bad("bad", "applications:\n- name: a\n  import_path: a:app\n- name: a\n  import_path: b:app\n", okGroup, ""),
			`serve_config: applications[1].name "a" is also the name of applications[0]`},
		{bad("bad", "applications:\n- import_path: a:app\n- import_path: b:app\n", okGroup, ""),
			`serve_config: applications[0] has no name: with several applications each needs one`},
		{bad("bad", okApps, `{ name = "w", gpus = 8, `+pool+` }`, ""),
			`worker_groups[0].gpus: each worker of group "w" asks for 8 GPUs, but the 4 nodes matching node_selector {raypool=gpu4} have at most 4 allocatable`},
		{bad("bad", okApps, `{ name = "w", replicas = 5, max_replicas = 4 }`, ""), `worker_groups[0].replicas: replicas = 5 is more than max_replicas = 4.`},
		{bad("bad", okApps, `{ name = "w" }, { name = "w" }`, ""), `worker_groups[1].name: "w" is also the name of worker_groups[0]`},
		{bad("bad", okApps, okGroup, `upgrade_strategy = { type = "NewClusterWithIncrementalUpgrade", step_size_percent = 10, interval_seconds = 30, gateway_class_name = "istio" }`),
			`upgrade_strategy.type: type = "NewClusterWithIncrementalUpgrade" scales the new cluster with Ray's autoscaler`},
		{bad("bad", okApps, okGroup, `autoscaling = { enabled = true }
  upgrade_strategy = { type = "NewClusterWithIncrementalUpgrade", step_size_percent = 10 }`),
			`upgrade_strategy.interval_seconds: type = "NewClusterWithIncrementalUpgrade" needs interval_seconds`},
		{bad("bad", okApps, okGroup, `upgrade_strategy = { type = "NewCluster", max_surge_percent = 50 }`),
			`upgrade_strategy.max_surge_percent: max_surge_percent applies only to type = "NewClusterWithIncrementalUpgrade", not "NewCluster"`},
		{bad("bad", okApps, okGroup, `initializing_timeout = "-5m"`), `initializing_timeout: "-5m" must be a positive duration`},
		{bad("bad", okApps, okGroup, `initializing_timeout = "soon"`), `initializing_timeout: "soon" is neither a duration`},
		{bad(strings.Repeat("s", 48), okApps, okGroup, ""), `name: "` + strings.Repeat("s", 48) + `" is 48 characters; KubeRay names the service's clusters`},
		{bad("9lives", okApps, okGroup, ""), `name: "9lives": KubeRay requires a RayService name to be a DNS-1035 label`},
		{bad("bad", okApps, `{ name = "w", template = { containers = [{ name = "sidecar" }] } }`, ""),
			`worker_groups[0].template.containers[0].image: container "sidecar" needs an image`},
	}
	var steps []resource.TestStep
	for _, c := range cases {
		steps = append(steps, resource.TestStep{Config: c.config, PlanOnly: true, ExpectError: acctest.ErrorMatching(c.want)})
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps:                    steps,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			rayService("default", "bad").Gone(env),
			rayService("default", "9lives").Gone(env),
			rayService("default", strings.Repeat("s", 48)).Gone(env),
		),
	})
}

// The example (examples/resources/aiplatform_ray_service): applied, empty
// plan, imported with the ID of its import.sh.
func TestAccRayServiceExample(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	ex := acctest.ResourceExample(t, "aiplatform_ray_service")
	cfg := acctest.Provider(env) + ex.Config
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					rayService("default", "llm").Equal(env, "30m", "metadata", "annotations", "ray.io/initializing-timeout"),
					func(s *terraform.State) error {
						name, err := rayServiceCluster(s, ex.Address)
						if err != nil {
							return err
						}
						return podsHave(env, "default", name, "worker", podWant{count: 1, gpus: 4, toleration: "nvidia.com/gpu",
							selector: "nvidia.com/gpu.product=NVIDIA-L40S"})(s)
					},
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: cfg, ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true},
		},
		CheckDestroy: rayService("default", "llm").Gone(env),
	})
}
