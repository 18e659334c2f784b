package reliability_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// drift says, for one resource type, how to configure it, which live object
// it manages, and how someone changes and removes that object by hand.
type drift struct {
	config  string
	address string
	object  acctest.Object
	// edit changes a managed field as kubectl edit would; want is that field's
	// path and configured value, checked after the repair.
	edit func(obj map[string]any)
	want []string
	// remove deletes the live state (nil: delete the object).
	remove func(t *testing.T, env *testenv.Env)
}

func kueue(resource, ns, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}, Namespace: ns, Name: name}
}

func spec(obj map[string]any) map[string]any { return obj["spec"].(map[string]any) }

// drifts covers every resource type of the provider; TestAccOutOfBand fails
// when a new type is missing here.
var drifts = map[string]drift{
	"aiplatform_resource_flavor": {
		config: `resource "aiplatform_resource_flavor" "x" {
  name        = "oob-flavor"
  node_labels = { pool = "h100" }
}`,
		address: "aiplatform_resource_flavor.x",
		object:  kueue("resourceflavors", "", "oob-flavor"),
		edit:    func(o map[string]any) { spec(o)["nodeLabels"] = map[string]any{"pool": "edited"} },
		want:    []string{"spec", "nodeLabels", "pool", "h100"},
	},
	"aiplatform_workload_priority_class": {
		config: `resource "aiplatform_workload_priority_class" "x" {
  name  = "oob-priority"
  value = 7
}`,
		address: "aiplatform_workload_priority_class.x",
		object:  kueue("workloadpriorityclasses", "", "oob-priority"),
		edit:    func(o map[string]any) { o["value"] = int64(99) },
		want:    []string{"value", "7"},
	},
	"aiplatform_local_queue": {
		config: `resource "aiplatform_local_queue" "x" {
  name          = "oob-lq"
  namespace     = "default"
  cluster_queue = "oob-cq"
}`,
		address: "aiplatform_local_queue.x",
		object:  kueue("localqueues", "default", "oob-lq"),
		edit:    func(o map[string]any) { spec(o)["stopPolicy"] = "HoldAndDrain" }, // cluster_queue is immutable
		want:    []string{"spec", "stopPolicy", "None"},
	},
	"aiplatform_cluster_queue": {
		config: `resource "aiplatform_cluster_queue" "x" {
  name = "oob-cq"
  resource_groups = [{ covered_resources = ["nvidia.com/gpu"], flavors = [{ name = "h100", resources = [{ name = "nvidia.com/gpu", nominal_quota = "8" }] }] }]
}`,
		address: "aiplatform_cluster_queue.x",
		object:  kueue("clusterqueues", "", "oob-cq"),
		edit: func(o map[string]any) {
			spec(o)["resourceGroups"].([]any)[0].(map[string]any)["flavors"].([]any)[0].(map[string]any)["resources"].([]any)[0].(map[string]any)["nominalQuota"] = "80"
		},
		want: []string{"spec", "resourceGroups", "0", "flavors", "0", "resources", "0", "nominalQuota", "8"},
	},
	"aiplatform_cohort": {
		config: `resource "aiplatform_cohort" "x" {
  name   = "oob-cohort"
  parent = "root"
}`,
		address: "aiplatform_cohort.x",
		object:  kueue("cohorts", "", "oob-cohort"),
		edit:    func(o map[string]any) { spec(o)["parentName"] = "elsewhere" },
		want:    []string{"spec", "parentName", "root"},
	},
	"aiplatform_admission_check": {
		config: `resource "aiplatform_admission_check" "x" {
  name            = "oob-check"
  controller_name = "example.com/oob"
  parameters      = { api_group = "example.com", kind = "Config", name = "oob" }
}`,
		address: "aiplatform_admission_check.x",
		object:  kueue("admissionchecks", "", "oob-check"),
		edit:    func(o map[string]any) { spec(o)["parameters"].(map[string]any)["name"] = "edited" }, // controllerName is immutable
		want:    []string{"spec", "parameters", "name", "oob"},
	},
	"aiplatform_provisioning_request_config": {
		config: `resource "aiplatform_provisioning_request_config" "x" {
  name                    = "oob-prc"
  provisioning_class_name = "check-capacity.autoscaling.x-k8s.io"
}`,
		address: "aiplatform_provisioning_request_config.x",
		object:  kueue("provisioningrequestconfigs", "", "oob-prc"),
		edit:    func(o map[string]any) { spec(o)["provisioningClassName"] = "edited.example.com" },
		want:    []string{"spec", "provisioningClassName", "check-capacity.autoscaling.x-k8s.io"},
	},
	// No KubeRay operator or LWS controller runs here: these check the
	// provider's side (the object as written), not the operators' reaction.
	"aiplatform_ray_cluster": {
		config: `resource "aiplatform_ray_cluster" "x" {
  name           = "oob-ray"
  namespace      = "default"
  ray_version    = "2.46.0"
  wait_for_ready = false
  head           = { cpu = "1", memory = "2Gi" }
  worker_groups  = [{ name = "gpu", replicas = 1, max_replicas = 4, gpus = 4, node_selector = { "nvidia.com/gpu.product" = "NVIDIA-A100-SXM4-80GB" } }]
}`,
		address: "aiplatform_ray_cluster.x",
		object:  acctest.Object{GVR: schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}, Namespace: "default", Name: "oob-ray"},
		edit:    func(o map[string]any) { spec(o)["workerGroupSpecs"].([]any)[0].(map[string]any)["replicas"] = int64(3) },
		want:    []string{"spec", "workerGroupSpecs", "0", "replicas", "1"},
	},
	"aiplatform_ray_service": {
		config: `resource "aiplatform_ray_service" "x" {
  name           = "oob-rs"
  namespace      = "default"
  ray_version    = "2.46.0"
  wait_for_ready = false
  serve_config   = yamlencode({ applications = [{ name = "app", import_path = "serve_app:app" }] })
  head           = { cpu = "1", memory = "2Gi" }
  worker_groups  = [{ name = "gpu", replicas = 1, gpus = 4, node_selector = { "nvidia.com/gpu.product" = "NVIDIA-A100-SXM4-80GB" } }]
}`,
		address: "aiplatform_ray_service.x",
		object:  acctest.Object{GVR: schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayservices"}, Namespace: "default", Name: "oob-rs"},
		edit: func(o map[string]any) {
			spec(o)["rayClusterConfig"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)["replicas"] = int64(3)
		},
		want: []string{"spec", "rayClusterConfig", "workerGroupSpecs", "0", "replicas", "1"},
	},
	"aiplatform_lws_group": {
		config: `resource "aiplatform_lws_group" "x" {
  name      = "oob-lws"
  namespace = "default"
  replicas  = 2
  size      = 2
  worker    = { image = "vllm/vllm-openai:v0.9.0", gpus = 8, node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" } }
  # No LWS controller runs in this package's cluster: the groups never turn Ready.
  wait_for_ready = false
}`,
		address: "aiplatform_lws_group.x",
		object:  acctest.Object{GVR: schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}, Namespace: "default", Name: "oob-lws"},
		edit:    func(o map[string]any) { spec(o)["replicas"] = int64(5) },
		want:    []string{"spec", "replicas", "2"},
	},
	"aiplatform_model_deployment": {
		config: `resource "aiplatform_model_deployment" "x" {
  name             = "oob-model"
  namespace        = "default"
  template         = { containers = [{ name = "server", image = "vllm/vllm-openai:v0.9.0" }], node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" } }
  model            = { params_billion = 8, dtype = "bf16", context_length = 8192, kv_cache_bytes_per_token = 131072 }
  gpus_per_replica = 1
  gpu_memory       = "80Gi"
  wait_for_ready   = false
}`,
		address: "aiplatform_model_deployment.x",
		object:  acctest.Object{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "default", Name: "oob-model"},
		edit:    func(o map[string]any) { spec(o)["replicas"] = int64(4) },
		want:    []string{"spec", "replicas", "1"},
	},
	"aiplatform_checkpoint_store": {
		config: `resource "aiplatform_checkpoint_store" "x" {
  name              = "oob-ckpt"
  namespace         = "default"
  size              = "1Gi"
  labels            = { team = "llm" }
  retain_on_destroy = false
}`,
		address: "aiplatform_checkpoint_store.x",
		object:  acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Namespace: "default", Name: "oob-ckpt"},
		edit:    func(o map[string]any) { o["metadata"].(map[string]any)["labels"].(map[string]any)["team"] = "edited" },
		want:    []string{"metadata", "labels", "team", "llm"},
	},
	"aiplatform_model_cache": {
		config: `resource "aiplatform_model_cache" "x" {
  name      = "oob-cache"
  namespace = "default"
  source    = { uri = "hf://org/model", revision = "main" }
  size      = "1Gi"
}`,
		address: "aiplatform_model_cache.x",
		object:  acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Namespace: "default", Name: "oob-cache"},
		// Someone wipes the record of what is warmed: the plan warms again.
		edit: func(o map[string]any) {
			ann := o["metadata"].(map[string]any)["annotations"].(map[string]any)
			var rec map[string]any
			_ = json.Unmarshal([]byte(ann["model-cache.aiplatform.terraform.io/config"].(string)), &rec)
			delete(rec, "warmed")
			b, _ := json.Marshal(rec)
			ann["model-cache.aiplatform.terraform.io/config"] = string(b)
			delete(ann, "model-cache.aiplatform.terraform.io/warmed-revision")
		},
		want: []string{"metadata", "annotations", "model-cache.aiplatform.terraform.io/warmed-revision", "main"},
		// The claim is protected while the warm-up Job's pod exists: a person
		// deletes the Job (as its TTL would) and then the claim.
		remove: func(t *testing.T, env *testenv.Env) {
			background := metav1.DeletePropagationBackground
			err := env.Client.BatchV1().Jobs("default").DeleteCollection(context.Background(),
				metav1.DeleteOptions{PropagationPolicy: &background},
				metav1.ListOptions{LabelSelector: "model-cache.aiplatform.terraform.io/name=oob-cache"})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 150; i++ {
				pods, err := env.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "model-cache.aiplatform.terraform.io/name=oob-cache"})
				if err == nil && len(pods.Items) == 0 {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			(acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Namespace: "default", Name: "oob-cache"}).Delete(t, env)
		},
	},
	"aiplatform_volcano_queue": {
		config: `resource "aiplatform_volcano_queue" "x" {
  name   = "oob-vq"
  weight = 2
}`,
		address: "aiplatform_volcano_queue.x",
		object:  acctest.Object{GVR: schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}, Name: "oob-vq"},
		edit:    func(o map[string]any) { spec(o)["weight"] = int64(9) },
		want:    []string{"spec", "weight", "2"},
	},
	"aiplatform_gpu_node_pool": {
		config: `resource "aiplatform_gpu_node_pool" "x" {
  name     = "oob-pool"
  selector = { "nvidia.com/gpu.product" = "NVIDIA-A100-SXM4-80GB" }
  labels   = { "oob/pool" = "a100" }
}`,
		address: "aiplatform_gpu_node_pool.x",
		object:  acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Name: "a100-0"},
		edit: func(o map[string]any) {
			o["metadata"].(map[string]any)["labels"].(map[string]any)["oob/pool"] = "edited"
		},
		want: []string{"metadata", "labels", "oob/pool", "a100"},
		remove: func(t *testing.T, env *testenv.Env) { // the pool's "object" is its labels: take them off
			n, err := env.Client.CoreV1().Nodes().Get(context.Background(), "a100-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			delete(n.Labels, "oob/pool")
			if _, err := env.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{FieldManager: "someone-else"}); err != nil {
				t.Fatal(err)
			}
		},
	},
}

// coveredElsewhere names resource types whose out-of-band edits and deletes
// are tested in their own package, and where.
var coveredElsewhere = map[string]string{
	"aiplatform_kueue": "internal/resources/installs TestAccKueue: deployment scaled and manager config edited by hand, drift planned, repaired, empty plan",
	// The Volcano release's drift is computed by the same code as Kueue's
	// (internal/helm); no hand edit of the stand-in chart is tested yet.
	"aiplatform_volcano":          "internal/helm drift, exercised through aiplatform_kueue (TestAccKueue)",
	"aiplatform_kuberay_operator": "internal/resources/installs TestAccKubeRayOperator: operator Deployment scaled by hand, drift planned, repaired",
	"aiplatform_mpi_operator":     "internal/resources/installs TestAccMPIOperator: Deployment scaled, ClusterRole and CRD edited, Deployment deleted by hand; drift planned, repaired, empty plan",
	"aiplatform_lws_controller":   "internal/resources/installs TestAccLWSController: controller Deployment scaled by hand, drift planned, repaired",
	// Its cluster needs the InferencePool CRD and the endpoint picker.
	"aiplatform_inference_pool": "internal/resources/serving TestAccInferencePool: the picker's Deployment deleted by hand, drift planned, repaired, empty plan",

	// Training controllers.
	"aiplatform_jobset_controller": "internal/resources/installs TestAccJobSetController: controller Deployment scaled by hand, drift planned, repaired",
	"aiplatform_trainer":           "internal/resources/installs TestAccTrainer: manager configuration edited, a default runtime deleted and another edited by hand, drift planned, repaired",
	"aiplatform_kserve":            "internal/resources/installs/kserve TestAccKServe: deployment mode in inferenceservice-config and a webhook caBundle changed by hand, drift planned, repaired, empty plan",
	// A check leaves no object behind (its MPIJob is deleted once the log is
	// read): what can change out of band is the pool it ran on.
	"aiplatform_nccl_check": "internal/resources/training TestAccNCCLCheckReplanOnNodeJoin: a node joining or leaving the pool plans a re-run",
	// A migration owns no object: what changes out of band is a CRD's
	// status.storedVersions listing an old version again.
	"aiplatform_storage_version_migration": "internal/resources/installs/upgrades TestAccKueueUpgradePlan: a CRD's status.storedVersions set by hand to list v1beta1 again, the rewrite planned with its count, applied, empty plan",
	// Kueue makes a Topology's levels immutable: the only edit by hand is
	// delete and create again.
	"aiplatform_topology": "internal/resources/kueue TestAccTopology: recreated by hand with other levels (replace planned and applied), deleted by hand (recreated)",
	// The runtime's CRDs come with Trainer, which this package's cluster does not run.
	"aiplatform_training_runtime": "internal/resources/training TestAccTrainingRuntimeTorch: runtime edited (image, numNodes) and deleted by hand, drift planned, repaired, empty plan",
	// KServe's CRDs are installed by the serving package's tests, not this package's cluster.
	"aiplatform_serving_runtime":    "internal/resources/serving TestAccServingRuntimeCluster: runtime edited by hand (liveness probe removed, image changed), drift planned, repaired with force_conflicts, deleted by hand (recreated), empty plan",
	"aiplatform_llm_service_preset": "internal/resources/serving TestAccLLMServicePreset: preset edited by hand (tensor parallelism, startup probe removed), drift planned, repaired with force_conflicts, deleted by hand (recreated), empty plan",
	// MultiKueue needs a worker cluster (and the Kueue manager, for Active).
	"aiplatform_multikueue_cluster": "internal/resources/kueue/multikueue TestAccMultiKueueClusterLifecycle: kubeconfig Secret location edited, the Secret's kubeconfig changed and the Secret deleted by hand (update planned, repaired), the object deleted by hand (recreated)",
	"aiplatform_multikueue_config":  "internal/resources/kueue/multikueue TestAccMultiKueueClusterLifecycle: clusters edited by hand (update planned, repaired), deleted by hand (recreated)",
}

// Every resource type, edited by hand and then deleted by hand: each time the
// plan shows a change, the apply repairs it (taking the field back from the
// manager that edited it, with force_conflicts), and the plan is empty again.
func TestAccOutOfBand(t *testing.T) {
	env := acctest.Env(t)
	p := provider.New("test")()
	for _, newResource := range p.Resources(context.Background()) {
		var md resource.MetadataResponse
		newResource().Metadata(context.Background(), resource.MetadataRequest{ProviderTypeName: "aiplatform"}, &md)
		if _, ok := drifts[md.TypeName]; !ok && coveredElsewhere[md.TypeName] == "" {
			t.Errorf("resource type %s has no out-of-band case in drifts: add one", md.TypeName)
		}
	}
	for typeName, d := range drifts {
		t.Run(typeName, func(t *testing.T) {
			cfg := acctest.Provider(env, "force_conflicts = true") + d.config + "\n"
			want := d.want[len(d.want)-1]
			field := d.want[:len(d.want)-1]
			remove := func() {
				if d.remove != nil {
					d.remove(t, env)
				} else {
					d.object.Delete(t, env)
				}
			}
			tfresource.Test(t, tfresource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps: []tfresource.TestStep{
					{Config: cfg, ConfigPlanChecks: tfresource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
					{
						PreConfig: func() { d.object.Edit(t, env, "kubectl-edit", d.edit) },
						Config:    cfg,
						ConfigPlanChecks: tfresource.ConfigPlanChecks{
							PreApply:             []plancheck.PlanCheck{plancheck.ExpectNonEmptyPlan()},
							PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
						},
						Check: d.object.Equal(env, want, field...),
					},
					{
						PreConfig: remove,
						Config:    cfg,
						ConfigPlanChecks: tfresource.ConfigPlanChecks{
							PreApply:             []plancheck.PlanCheck{plancheck.ExpectNonEmptyPlan()},
							PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
						},
						Check: d.object.Equal(env, want, field...),
					},
				},
			})
		})
	}
}
