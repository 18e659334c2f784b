package serving_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// Adopting RayClusters created from KubeRay's published samples (shapes
// written here, not copied): ray-cluster.complete.yaml (requests ≠ limits,
// the ray-logs emptyDir mounted in head and workers, container ports, an
// empty labels map) with what production clusters add (env from a Secret, a
// log-shipping sidecar), and ray-cluster.sample.yaml (quantities as numbers,
// no head serviceType or rayStartParams). Each is created by another field
// manager (as kubectl would), imported with generated configuration, planned
// empty and left untouched, then scaled 1 → 2 with force_conflicts: the
// apply changes the worker group's replicas and nothing else.

// rayObject is a RayCluster with one head and one worker group.
func rayObject(name string, head, worker map[string]any, group map[string]any) *unstructured.Unstructured {
	wg := map[string]any{"groupName": "small-group", "replicas": int64(1), "minReplicas": int64(1), "maxReplicas": int64(3),
		"template": worker}
	for k, v := range group {
		wg[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayCluster",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"rayVersion":       "2.46.0",
			"headGroupSpec":    head,
			"workerGroupSpecs": []any{wg},
		},
	}}
}

// completeRay is shaped like ray-cluster.complete.yaml plus a Secret env
// var and a sidecar on the workers.
func completeRay(name string, group map[string]any) *unstructured.Unstructured {
	logs := func() map[string]any { return map[string]any{"name": "ray-logs", "emptyDir": map[string]any{}} }
	mount := func() map[string]any { return map[string]any{"name": "ray-logs", "mountPath": "/tmp/ray"} }
	res := func(memory string) map[string]any {
		return map[string]any{
			"requests": map[string]any{"cpu": "500m", "memory": memory},
			"limits":   map[string]any{"cpu": "1", "memory": memory},
		}
	}
	head := map[string]any{
		"serviceType":    "ClusterIP",
		"rayStartParams": map[string]any{"dashboard-host": "0.0.0.0"},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{}},
			"spec": map[string]any{
				"containers": []any{map[string]any{
					"name": "ray-head", "image": "rayproject/ray:2.46.0",
					"ports": []any{
						map[string]any{"containerPort": int64(6379), "name": "gcs"},
						map[string]any{"containerPort": int64(8265), "name": "dashboard"},
						map[string]any{"containerPort": int64(10001), "name": "client"},
					},
					"volumeMounts": []any{mount()},
					"resources":    res("2G"),
				}},
				"volumes": []any{logs()},
			},
		},
	}
	worker := map[string]any{"spec": map[string]any{
		"containers": []any{
			map[string]any{
				"name": "ray-worker", "image": "rayproject/ray:2.46.0",
				"env": []any{map[string]any{"name": "HF_TOKEN", "valueFrom": map[string]any{
					"secretKeyRef": map[string]any{"name": "hf-token", "key": "token", "optional": true}}}},
				"volumeMounts": []any{mount()},
				"resources":    res("1G"),
			},
			map[string]any{
				"name": "log-shipper", "image": "busybox:1.36",
				"args":         []any{"sh", "-c", "tail -F /tmp/ray/session_latest/logs/raylet.out"},
				"volumeMounts": []any{map[string]any{"name": "ray-logs", "mountPath": "/tmp/ray", "readOnly": true}},
			},
		},
		"volumes": []any{logs()},
	}}
	g := map[string]any{"rayStartParams": map[string]any{}}
	for k, v := range group {
		g[k] = v
	}
	return rayObject(name, head, worker, g)
}

// sampleRay is shaped like ray-cluster.sample.yaml: numbers for quantities,
// no serviceType or rayStartParams on the head, requests = limits; its head
// container is named "head", which the import adopts.
func sampleRay(name string) *unstructured.Unstructured {
	res := func(memory string) map[string]any {
		return map[string]any{
			"requests": map[string]any{"cpu": int64(1), "memory": memory},
			"limits":   map[string]any{"cpu": int64(1), "memory": memory},
		}
	}
	head := map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{
			"name": "head", "image": "rayproject/ray:2.46.0", "resources": res("2G"),
			"ports": []any{
				map[string]any{"containerPort": int64(6379), "name": "gcs-server"},
				map[string]any{"containerPort": int64(8265), "name": "dashboard"},
				map[string]any{"containerPort": int64(10001), "name": "client"},
			},
		}},
	}}}
	worker := map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "ray-worker", "image": "rayproject/ray:2.46.0", "resources": res("1G")}},
	}}
	return rayObject(name, head, worker, map[string]any{"rayStartParams": map[string]any{}})
}

const rayReplicasPath = `spec.workerGroupSpecs["groupName=small-group"].replicas`

// The complete sample: the generated configuration says what the object
// carries (requests apart from limits, the log volume and mounts, ports,
// the Secret env var, the sidecar) under the live container names, and the
// forced scale changes the replicas only.
func TestAccRayClusterAdoptComplete(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	adoptForcedScale(t, env, "aiplatform_ray_cluster", rayCluster("default", "complete"), completeRay("complete", nil), rayReplicasPath)
	t.Logf("generated configuration:\n%s", generated(t, "aiplatform_ray_cluster"))
	gen := strings.Join(strings.Fields(generated(t, "aiplatform_ray_cluster")), " ")
	for _, want := range []string{
		`requests = { cpu = "500m" }`, `limits = { cpu = "1" }`, `memory = "2G"`,
		`name = "ray-logs"`, `mount_path = "/tmp/ray"`, `container_port = 8265`,
		`secret_key_ref = { key = "token" name = "hf-token" optional = true }`,
		`image = "busybox:1.36"`, `name = "log-shipper"`,
	} {
		if !strings.Contains(gen, want) {
			t.Errorf("the generated configuration lacks %s:\n%s", want, generated(t, "aiplatform_ray_cluster"))
		}
	}
	if strings.Contains(gen, `container_name = "`) {
		t.Errorf("the default container names are spelled out:\n%s", generated(t, "aiplatform_ray_cluster"))
	}
}

// The sample: numbers stay numbers, the head's container keeps its name
// ("head", no "ray-head" beside it), and what the head leaves out stays out.
func TestAccRayClusterAdoptSample(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	adoptForcedScale(t, env, "aiplatform_ray_cluster", rayCluster("default", "sample"), sampleRay("sample"), rayReplicasPath)
	gen := strings.Join(strings.Fields(generated(t, "aiplatform_ray_cluster")), " ")
	for _, want := range []string{`container_name = "head"`, `cpu = "1"`, `container_port = 6379`} {
		if !strings.Contains(gen, want) {
			t.Errorf("the generated configuration lacks %s:\n%s", want, generated(t, "aiplatform_ray_cluster"))
		}
	}
}

// A field no attribute carries (a multi-host group's numOfHosts): the
// import warns with its path; the forced scale would reset it with the
// atomic group list, so its plan names it and is refused; accepted, exactly
// it and the replicas change.
func TestAccRayClusterAdoptUnexpressed(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	numOfHosts := `spec.workerGroupSpecs["groupName=small-group"].numOfHosts`

	// The import's warning, from a plan that generates the configuration.
	obj := rayCluster("default", "warned")
	created := completeRay("warned", map[string]any{"numOfHosts": int64(2)})
	client := env.Dynamic.Resource(obj.GVR).Namespace("default")
	if _, err := client.Create(context.Background(), created, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	body := acctest.RequiredProviders + "variable \"kubeconfig\" { type = string }\nprovider \"aiplatform\" { config_path = var.kubeconfig }\n" +
		"import {\n  to = aiplatform_ray_cluster.warned\n  id = \"default/warned\"\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, dir)
	out, err := w.Run("plan", "-generate-config-out=generated.tf")
	if err != nil {
		t.Fatal(out, err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"has fields its configuration cannot say", numOfHosts, "accept_live_changes"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the import's warning lacks %q:\n%s", want, out)
		}
	}
	obj.Delete(t, env)

	adoptForcedScale(t, env, "aiplatform_ray_cluster", rayCluster("default", "multihost"),
		completeRay("multihost", map[string]any{"numOfHosts": int64(2)}), rayReplicasPath, numOfHosts)
}
