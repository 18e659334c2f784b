package kueue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// adoptYAML is a platform as a team writes it by hand after Kueue's
// published samples (docs' "Administer cluster quotas", "Topology Aware
// Scheduling", "Provisioning Request"): spot and on-demand flavors with a
// taint and its toleration, a topology-aware flavor, a cohort with its own
// quota, a ClusterQueue borrowing in it with fair sharing, preemption,
// flavor fungibility and a provisioning admission check on the spot flavor,
// a LocalQueue, a priority class. Nothing of it comes from the provider.
const adoptYAML = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: adopt-on-demand
spec:
  nodeLabels:
    example.com/capacity-type: on-demand
    example.com/gpu-product: NVIDIA-H100-80GB-HBM3
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: adopt-spot
spec:
  nodeLabels:
    example.com/capacity-type: spot
  nodeTaints:
  - key: example.com/spot
    value: "true"
    effect: NoSchedule
  tolerations:
  - key: example.com/spot
    operator: Equal
    value: "true"
    effect: NoSchedule
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata:
  name: adopt-default
spec:
  levels:
  - nodeLabel: cloud.example.com/topology-block
  - nodeLabel: cloud.example.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: adopt-tas
spec:
  nodeLabels:
    example.com/pool: tas
  topologyName: adopt-default
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: adopt-org
spec:
  fairSharing:
    weight: "2"
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: adopt-on-demand
      resources:
      - name: nvidia.com/gpu
        nominalQuota: "16"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: adopt-research
spec:
  parentName: adopt-org
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: adopt-capacity
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
  managedResources:
  - nvidia.com/gpu
  parameters:
    ValidUntilSeconds: "60"
  retryStrategy:
    backoffLimitCount: 2
    backoffBaseSeconds: 60
    backoffMaxSeconds: 1800
  podSetMergePolicy: IdenticalWorkloadSchedulingRequirements
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: adopt-provisioning
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: ProvisioningRequestConfig
    name: adopt-capacity
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: adopt-team-a
spec:
  cohortName: adopt-research
  namespaceSelector:
    matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: In
      values: [default, team-a]
  queueingStrategy: StrictFIFO
  fairSharing:
    weight: "3"
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort:
      policy: LowerPriority
      maxPriorityThreshold: 100
    withinClusterQueue: LowerPriority
  flavorFungibility:
    whenCanBorrow: TryNextFlavor
    whenCanPreempt: TryNextFlavor
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: adopt-on-demand
      resources:
      - name: cpu
        nominalQuota: "96"
      - name: memory
        nominalQuota: 1Ti
      - name: nvidia.com/gpu
        nominalQuota: "8"
        borrowingLimit: "8"
        lendingLimit: "4"
    - name: adopt-spot
      resources:
      - name: cpu
        nominalQuota: "48"
      - name: memory
        nominalQuota: 512Gi
      - name: nvidia.com/gpu
        nominalQuota: "16"
  admissionChecksStrategy:
    admissionChecks:
    - name: adopt-provisioning
      onFlavors: [adopt-spot]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: team-a
  namespace: default
spec:
  clusterQueue: adopt-team-a
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: adopt-production
value: 1000
description: Production inference and training; may preempt batch.
`

// adopted is one object of adoptYAML: its provider type, import ID and
// resourceVersion once created.
type adopted struct {
	typeName, id string
	obj          acctest.Object
	rv           string
}

// address is the Terraform address import blocks and `terraform import` use.
func (a adopted) address() string {
	return a.typeName + "." + strings.NewReplacer("-", "_", "/", "_").Replace(a.id)
}

var kueueTypes = map[string]struct{ typeName, resource string }{
	"ResourceFlavor":            {"aiplatform_resource_flavor", "resourceflavors"},
	"Topology":                  {"aiplatform_topology", "topologies"},
	"Cohort":                    {"aiplatform_cohort", "cohorts"},
	"ProvisioningRequestConfig": {"aiplatform_provisioning_request_config", "provisioningrequestconfigs"},
	"AdmissionCheck":            {"aiplatform_admission_check", "admissionchecks"},
	"ClusterQueue":              {"aiplatform_cluster_queue", "clusterqueues"},
	"LocalQueue":                {"aiplatform_local_queue", "localqueues"},
	"WorkloadPriorityClass":     {"aiplatform_workload_priority_class", "workloadpriorityclasses"},
}

// createAdoptYAML creates every object of adoptYAML as kubectl create would
// (its own field manager) and deletes them when the test ends.
func createAdoptYAML(t *testing.T, env *testenv.Env) []adopted {
	t.Helper()
	ctx := context.Background()
	var out []adopted
	for _, doc := range strings.Split(adoptYAML, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		kt, ok := kueueTypes[u.GetKind()]
		if !ok {
			t.Fatalf("no provider type for %s", u.GetKind())
		}
		obj := kueueObject(kt.resource, u.GetNamespace(), u.GetName())
		client := env.Dynamic.Resource(obj.GVR).Namespace(u.GetNamespace())
		created, err := client.Create(ctx, u, metav1.CreateOptions{FieldManager: "kubectl-create"})
		if err != nil {
			t.Fatalf("creating %s %s from upstream-style YAML: %v", u.GetKind(), u.GetName(), err)
		}
		name := u.GetName()
		t.Cleanup(func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		id := name
		if ns := u.GetNamespace(); ns != "" {
			id = ns + "/" + name
		}
		out = append(out, adopted{typeName: kt.typeName, id: id, obj: obj, rv: created.GetResourceVersion()})
	}
	kinds := map[string]bool{}
	for _, a := range out {
		kinds[a.typeName] = true
	}
	if len(kinds) != len(kueueTypes) {
		t.Fatalf("adoptYAML covers %d of the provider's %d Kueue kinds", len(kinds), len(kueueTypes))
	}
	return out
}

// untouched fails the test when an adopted object was written to since it
// was created.
func untouched(t *testing.T, env *testenv.Env, objs []adopted, after string) {
	t.Helper()
	for _, a := range objs {
		live, err := a.obj.Get(env)
		if err != nil || live == nil {
			t.Fatalf("%s: %s is gone: %v", after, a.id, err)
		}
		if live.GetResourceVersion() != a.rv {
			t.Errorf("%s wrote to %s %s: resourceVersion %s → %s", after, a.typeName, a.id, a.rv, live.GetResourceVersion())
		}
	}
}

const adoptProvider = acctest.RequiredProviders + `
variable "kubeconfig" { type = string }
provider "aiplatform" {
  config_path = var.kubeconfig
}
`

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every Kueue kind of the provider, created by hand from upstream-style
// YAML, adopted as users do with the terraform CLI: import blocks and
// `plan -generate-config-out`, then apply (imports only) and plan, which is
// empty; then the generated configuration again in a fresh state, adopted
// with `terraform import ADDRESS ID`, and planned empty. No object is written
// to at any point (resourceVersion unchanged).
func TestAccAdoptUpstreamKueueObjects(t *testing.T) {
	env := acctest.Env(t)
	objs := createAdoptYAML(t, env)

	src := t.TempDir()
	var imports strings.Builder
	imports.WriteString(adoptProvider)
	for _, a := range objs {
		fmt.Fprintf(&imports, "\nimport {\n  to = %s\n  id = %q\n}\n", a.address(), a.id)
	}
	writeFile(t, src, "main.tf", imports.String())
	w := acctest.NewWorkspace(t, env, src)
	if out, err := w.Run("plan", "-generate-config-out=generated.tf"); err != nil {
		t.Fatal(out, err)
	}
	gen, err := os.ReadFile(filepath.Join(w.Dir(), "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated configuration:\n%s", gen)
	for _, a := range objs {
		if !strings.Contains(string(gen), fmt.Sprintf("resource %q %q", a.typeName, strings.TrimPrefix(a.address(), a.typeName+"."))) {
			t.Errorf("no configuration generated for %s", a.address())
		}
	}
	// What the hand-written objects hold is in the generated configuration.
	for _, want := range []string{`"example.com/spot"`, `topology_name`, `"cloud.example.com/topology-rack"`, `reclaim_within_cohort`,
		`"TryNextFlavor"`, `"adopt-provisioning"`, `"check-capacity.autoscaling.x-k8s.io"`, `parent`, `lending_limit`, `StrictFIFO`, `Production inference`} {
		if !strings.Contains(string(gen), want) {
			t.Errorf("generated configuration lacks %s", want)
		}
	}
	out, err := w.Run("apply", "-auto-approve")
	if err != nil {
		t.Fatal(out, err)
	}
	if want := fmt.Sprintf("%d imported, 0 added, 0 changed, 0 destroyed", len(objs)); !strings.Contains(out, want) {
		t.Errorf("apply of the import blocks: want %q in\n%s", want, out)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after adopting with import blocks: exit code %d, want 0\n%s", code, out)
	}
	untouched(t, env, objs, "import blocks, -generate-config-out, apply and plan")

	// The same configuration, adopted by ID into a fresh state.
	src2 := t.TempDir()
	writeFile(t, src2, "main.tf", adoptProvider)
	writeFile(t, src2, "generated.tf", regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(string(gen), ""))
	w2 := acctest.NewWorkspace(t, env, src2)
	for _, a := range objs {
		if out, err := w2.Run("import", a.address(), a.id); err != nil {
			t.Fatalf("terraform import %s %s: %v\n%s", a.address(), a.id, err, out)
		}
	}
	if code, out := w2.PlanExitCode(); code != 0 {
		t.Fatalf("plan after terraform import by ID: exit code %d, want 0\n%s", code, out)
	}
	untouched(t, env, objs, "terraform import by ID and plan")
	// Terraform destroys both workspaces when the test ends; the cleanups
	// above then find the objects gone.
}
