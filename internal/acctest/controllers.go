package acctest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// The installs' test fixtures that more than one test package uses: the
// charts in the module cache, the configurations that install them, the
// live objects the tests look at, and the workloads they run.

var (
	JobSetDeployment  = NewObject("apps", "v1", "deployments", "jobset-system", "jobset-controller")
	JobSetCRD         = NewObject("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "jobsets.jobset.x-k8s.io")
	JobSetsGVR        = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	TrainerDeployment = NewObject("apps", "v1", "deployments", "kubeflow-system", "kubeflow-trainer-controller-manager")
	TrainJobsGVR      = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	KubeRayDeployment = NewObject("apps", "v1", "deployments", "kuberay-system", "kuberay-operator")
	RayClusterCRD     = NewObject("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "rayclusters.ray.io")
	LWSDeployment     = NewObject("apps", "v1", "deployments", "lws-system", "lws-controller-manager")
	LWSCRD            = NewObject("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "leaderworkersets.leaderworkerset.x-k8s.io")
)

// ModuleChart is the chart at chartDir of a module at a version, in the Go
// module cache (downloaded on first use).
func ModuleChart(t *testing.T, module, chartDir, version string) string {
	t.Helper()
	dir, err := testenv.ModuleDir(context.Background(), module, version)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, filepath.FromSlash(chartDir))
}

// JobSetChartAt is charts/jobset of a JobSet version in the module cache.
func JobSetChartAt(t *testing.T, version string) string {
	return ModuleChart(t, catalog.JobSet.Module, catalog.JobSet.ChartDir, version)
}

// JobSetBlock is an aiplatform_jobset_controller from the module's chart.
func JobSetBlock(t *testing.T, name, extra string) string {
	return fmt.Sprintf(`
resource "aiplatform_jobset_controller" %q {
  chart       = { path = %q }
  timeout     = "3m"
  remove_crds = true
  values      = <<-EOT
    controller:
      resources:
        requests:
          cpu: 100m
          memory: 128Mi
  EOT
%s
}
`, name, JobSetChartAt(t, podrunner.JobSetVersion), extra)
}

// GangJobSet is a JobSet in default of a leader job (1 pod) and a workers
// job (2 pods), with a success policy over successTargets when given.
func GangJobSet(name string, successTargets ...any) *unstructured.Unstructured {
	rj := func(n string, replicas, parallelism int64) map[string]any {
		return map[string]any{"name": n, "replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"parallelism": parallelism, "completions": parallelism,
			"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
				"containers": []any{map[string]any{"name": "main", "image": "busybox:1.36", "command": []any{"true"}}}}},
		}}}
	}
	spec := map[string]any{"replicatedJobs": []any{rj("leader", 1, 1), rj("workers", 1, 2)}}
	if len(successTargets) > 0 {
		spec["successPolicy"] = map[string]any{"operator": "All", "targetReplicatedJobs": successTargets}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

// TrainerChartAt is charts/kubeflow-trainer of a Trainer version in the
// module cache (the pod runner runs the manager of the chart's image tag).
func TrainerChartAt(t *testing.T, version string) string {
	return ModuleChart(t, catalog.Trainer.Module, catalog.Trainer.ChartDir, version)
}

// TrainJob is a TrainJob in default on the runtime named, over nodes nodes,
// with env (EnvVar objects) given to its trainer.
func TrainJob(name, runtime string, nodes int64, env ...any) *unstructured.Unstructured {
	trainer := map[string]any{"numNodes": nodes}
	if len(env) > 0 {
		trainer["env"] = env
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"runtimeRef": map[string]any{"name": runtime}, "trainer": trainer},
	}}
}

// LWSChartAt is charts/lws of a version of sigs.k8s.io/lws in the module
// cache (every version's says 0.1.0; its image tag, "main", runs
// testenv.LWSVersion unless image.manager.tag names another version).
func LWSChartAt(t *testing.T, version string) string {
	return ModuleChart(t, catalog.LWS.Module, catalog.LWS.ChartDir, version)
}

// LWSControllerBlock is an aiplatform_lws_controller of the module chart at
// chart (version 0.1.0), with small requests; values adds to its values
// (YAML lines indented four spaces).
func LWSControllerBlock(chart, values string) string {
	return fmt.Sprintf(`
resource "aiplatform_lws_controller" "this" {
  chart       = { path = %q }
  version     = "0.1.0"
  timeout     = "3m"
  remove_crds = true
  values      = <<-EOT
%s    resources:
      requests:
        cpu: 100m
        memory: 256Mi
  EOT
}
`, chart, values)
}

// LWSGroupBlock is an aiplatform_lws_group "g" of busybox groups of two,
// created after the controller, not waited for.
func LWSGroupBlock(name string, replicas int) string {
	return fmt.Sprintf(`
resource "aiplatform_lws_group" "g" {
  name           = %q
  namespace      = "default"
  size           = 2
  replicas       = %d
  wait_for_ready = false
  worker = {
    image   = "busybox:1.36"
    command = ["sleep", "infinity"]
  }
  depends_on = [aiplatform_lws_controller.this]
}
`, name, replicas)
}

// KueueChartAt is charts/kueue of a Kueue version in the module cache (the
// pod runner runs the manager of the chart's image tag).
func KueueChartAt(t *testing.T, version string) string {
	return ModuleChart(t, catalog.KueueModule, catalog.KueueChartDir, version)
}

// KueueBlockAt is an aiplatform_kueue from the module's chart of a version.
func KueueBlockAt(t *testing.T, version, extra string) string {
	return fmt.Sprintf(`
resource "aiplatform_kueue" "this" {
  version = %q
  chart   = { path = %q }
  timeout = "3m"
%s
}
`, strings.TrimPrefix(version, "v"), KueueChartAt(t, version), extra)
}
