package gpu_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

func TestAccGPUCapacity(t *testing.T) {
	env := acctest.Env(t)
	// A running pod bound to cap-0 that holds 3 of its 4 GPUs.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "cap-0", Containers: []corev1.Container{{
			Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": k8sresource.MustParse("3")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": k8sresource.MustParse("3")},
			},
		}}},
	}
	if _, err := env.Client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = env.Client.CoreV1().Pods("default").Delete(context.Background(), "holder", metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	ds := "data.aiplatform_gpu_capacity.a100"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config: acctest.Provider(env) + `
data "aiplatform_gpu_capacity" "a100" {
  node_selector = { testpool = "cap" }
}
`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds, "allocatable_total", "8"),
				resource.TestCheckResourceAttr(ds, "requested_total", "3"),
				resource.TestCheckResourceAttr(ds, "free_total", "5"),
				resource.TestCheckResourceAttr(ds, "largest_free_block", "4"),
				resource.TestCheckResourceAttr(ds, "whole_free_nodes", "1"),
				resource.TestCheckResourceAttr(ds, "nodes.#", "2"),
				resource.TestCheckResourceAttr(ds, "nodes.0.name", "cap-0"),
				resource.TestCheckResourceAttr(ds, "nodes.0.requested", "3"),
				resource.TestCheckResourceAttr(ds, "nodes.0.free", "1"),
				resource.TestCheckResourceAttr(ds, "nodes.0.gpu_product", "NVIDIA-A100-SXM4-80GB"),
				resource.TestCheckResourceAttr(ds, "nodes.1.ready", "true"),
			),
		}},
	})
}
