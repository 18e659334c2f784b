package legacy_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// Topology, AdmissionCheck, ProvisioningRequestConfig and a ClusterQueue with
// admission checks per flavor and no quota, on a cluster serving v1beta1 only.
func TestAccKueueV1beta1TopologyAndChecks(t *testing.T) {
	env := acctest.Env(t)
	config := acctest.Provider(env) + `
resource "aiplatform_topology" "t" {
  name   = "legacy-topology"
  levels = ["example.com/block", "kubernetes.io/hostname"]
}

resource "aiplatform_provisioning_request_config" "p" {
  name                    = "legacy-prc"
  provisioning_class_name = "check-capacity.autoscaling.x-k8s.io"
}

resource "aiplatform_admission_check" "a" {
  name            = "legacy-check"
  controller_name = "kueue.x-k8s.io/provisioning-request"
  parameters      = { api_group = "kueue.x-k8s.io", kind = "ProvisioningRequestConfig", name = aiplatform_provisioning_request_config.p.name }
}

resource "aiplatform_cluster_queue" "q" {
  name                      = "legacy-router"
  admission_checks_strategy = [{ name = aiplatform_admission_check.a.name, on_flavors = ["spot"] }]
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					v1beta1("topologies", "legacy-topology").Equal(env, "kubernetes.io/hostname", "spec", "levels", "1", "nodeLabel"),
					v1beta1("provisioningrequestconfigs", "legacy-prc").Equal(env, int64(3), "spec", "retryStrategy", "backoffLimitCount"),
					v1beta1("admissionchecks", "legacy-check").Equal(env, "legacy-prc", "spec", "parameters", "name"),
					v1beta1("clusterqueues", "legacy-router").Equal(env, "[spot]", "spec", "admissionChecksStrategy", "admissionChecks", "0", "onFlavors"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{ResourceName: "aiplatform_topology.t", ImportState: true, ImportStateId: "legacy-topology", ImportStateVerify: true},
			{ResourceName: "aiplatform_admission_check.a", ImportState: true, ImportStateId: "legacy-check", ImportStateVerify: true},
			{ResourceName: "aiplatform_provisioning_request_config.p", ImportState: true, ImportStateId: "legacy-prc", ImportStateVerify: true},
			{ResourceName: "aiplatform_cluster_queue.q", ImportState: true, ImportStateId: "legacy-router", ImportStateVerify: true},
		},
		CheckDestroy: resource.ComposeTestCheckFunc(v1beta1("topologies", "legacy-topology").Gone(env), v1beta1("clusterqueues", "legacy-router").Gone(env)),
	})
}

// v1beta1's plain list spec.admissionChecks, as older manifests write it,
// reads as admission_checks.
func TestAccKueueV1beta1AdmissionChecksList(t *testing.T) {
	env := acctest.Env(t)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": "legacy-list"},
		"spec":     map[string]any{"namespaceSelector": map[string]any{}, "admissionChecks": []any{"one", "two"}},
	}}
	ctx := context.Background()
	gvr := v1beta1("clusterqueues", "legacy-list").GVR
	if _, err := env.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Dynamic.Resource(gvr).Delete(ctx, "legacy-list", metav1.DeleteOptions{}) })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config: acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "q" {
  name             = "legacy-list"
  admission_checks = ["one", "two"]
}
`,
			ResourceName:       "aiplatform_cluster_queue.q",
			ImportState:        true,
			ImportStateKind:    resource.ImportBlockWithID,
			ImportStateId:      "legacy-list",
			ImportStatePersist: false,
		}},
	})
}
