package multikueue_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// Bad inputs are refused at plan with the attribute's path, and nothing is
// written: no MultiKueueCluster, MultiKueueConfig or Secret appears.
func TestAccMultiKueueBadInputsRefusedAtPlan(t *testing.T) {
	manager, worker := clustersOf(t)
	good := workerKubeconfig(t, worker)
	// Variants of the worker's kubeconfig that Kueue would refuse (or could
	// not use from inside the manager).
	edit := func(from, to string) string {
		if !strings.Contains(good, from) {
			t.Fatalf("the worker's kubeconfig has no %q to edit", from)
		}
		return strings.Replace(good, from, to, 1)
	}
	withUser := func(user string) string {
		i := strings.Index(good, "users:")
		if i < 0 {
			t.Fatal("the worker's kubeconfig has no users")
		}
		return good[:i] + "users:\n- name: admin\n  user:\n" + user
	}
	badKubeconfigs := []struct{ name, kubeconfig, want string }{
		{"not yaml", "{{{", "not a kubeconfig"},
		{"no current context", edit("current-context: testenv", "current-context: nowhere"), `current-context "nowhere"`},
		{"insecure", edit("certificate-authority-data:", "insecure-skip-tls-verify: true\n    certificate-authority-data:"), "insecure-skip-tls-verify"},
		{"plain http", edit("server: https://", "server: http://"), "is not https"},
		{"token file", withUser("    tokenFile: /var/run/token\n"), "credentials are files"},
		{"basic auth", withUser("    username: admin\n    password: secret\n"), "basic auth"},
		{"exec plugin", withUser("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: get-token\n"), "exec and auth-provider"},
		{"no credentials", withUser("    {}\n"), "no credentials"},
	}
	var steps []resource.TestStep
	p := acctest.Provider(manager)
	for _, b := range badKubeconfigs {
		steps = append(steps, resource.TestStep{
			Config: p + `
variable "kubeconfig" {
  type      = string
  sensitive = true
}
resource "aiplatform_multikueue_cluster" "bad" {
  name              = "bad"
  kubeconfig_secret = "bad-kubeconfig"
  kubeconfig_wo     = var.kubeconfig
}
`,
			ConfigVariables: config.Variables{"kubeconfig": config.StringVariable(b.kubeconfig)},
			PlanOnly:        true,
			ExpectError:     regexp.MustCompile(`(?s)kubeconfig_wo.*` + wrapped(b.want)),
		})
	}
	for _, b := range []struct{ name, hcl, want string }{
		{"secret name", `resource "aiplatform_multikueue_cluster" "bad" {
  name              = "bad"
  kubeconfig_secret = "Bad_Secret"
}`, `kubeconfig_secret`},
		{"namespace", `resource "aiplatform_multikueue_cluster" "bad" {
  name              = "bad"
  kubeconfig_secret = "bad-kubeconfig"
  kueue_namespace   = "kueue.system"
}`, `kueue_namespace`},
		{"cluster name", `resource "aiplatform_multikueue_cluster" "bad" {
  name              = "Bad Cluster"
  kubeconfig_secret = "bad-kubeconfig"
}`, `name`},
		{"no clusters", `resource "aiplatform_multikueue_config" "bad" {
  name     = "bad"
  clusters = []
}`, `clusters`},
		{"duplicate clusters", `resource "aiplatform_multikueue_config" "bad" {
  name     = "bad"
  clusters = ["a", "a"]
}`, `clusters`},
		{"cluster not a name", `resource "aiplatform_multikueue_config" "bad" {
  name     = "bad"
  clusters = ["Worker_1"]
}`, `clusters\[0\]`},
		{"check with the wrong parameters", `resource "aiplatform_admission_check" "bad" {
  name            = "bad"
  controller_name = "kueue.x-k8s.io/multikueue"
  parameters      = { api_group = "kueue.x-k8s.io", kind = "ProvisioningRequestConfig", name = "bad" }
}`, `MultiKueueConfig`},
	} {
		steps = append(steps, resource.TestStep{Config: p + b.hcl, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)` + b.want)})
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: acctest.Factories, Steps: steps})
	for _, o := range []acctest.Object{kueueObject("multikueueclusters", "", "bad"), kueueObject("multikueueconfigs", "", "bad"),
		kueueObject("admissionchecks", "", "bad"), secret("bad-kubeconfig")} {
		if err := o.Gone(manager)(nil); err != nil {
			t.Errorf("a refused plan wrote something: %v", err)
		}
	}
}

// The plan warns (and does not fail) when the worker cannot be used: its
// kubeconfig Secret is missing, its API server does not answer, or it lacks
// the queues the manager dispatches to it. Once the worker has them, the
// warning is gone.
func TestAccMultiKueueWorkerChecksWarn(t *testing.T) {
	manager, worker := clustersOf(t)
	dir := t.TempDir()
	unreachable := strings.Replace(workerKubeconfig(t, worker), worker.Host, "https://127.0.0.1:1", 1)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(warnConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, manager, dir)
	w.Env = append(w.Env, "TF_VAR_worker_kubeconfig="+worker.Kubeconfig, "TF_VAR_unreachable="+unreachable)
	out, err := w.Run("apply", "-auto-approve")
	if err != nil {
		t.Fatal(err)
	}
	out = unwrapped(out)
	for _, want := range []string{
		"The worker's kubeconfig Secret is missing", "kueue-system/no-such-secret",
		"MultiKueue worker unreachable", "127.0.0.1:1",
		`MultiKueue cluster not found`, `clusters[1]: no aiplatform_multikueue_cluster "reachabel" is planned before this config`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the first plan does not warn %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `no aiplatform_multikueue_cluster "reachable"`) {
		t.Errorf("the plan warns of a worker planned in the same run:\n%s", out)
	}
	// Now the manager's queues exist and the worker has none of them.
	out, err = w.Run("plan")
	if err != nil {
		t.Fatal(err)
	}
	out = unwrapped(out)
	for _, want := range []string{"MultiKueue worker lacks the manager's queues", "ClusterQueue dispatching", "LocalQueue default/dispatching"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan does not warn %q:\n%s", want, out)
		}
	}
	// The worker's team creates them.
	ctx := context.Background()
	cq := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": "dispatching"}, "spec": map[string]any{"namespaceSelector": map[string]any{}}}}
	lq := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": "dispatching", "namespace": "default"}, "spec": map[string]any{"clusterQueue": "dispatching"}}}
	for _, o := range []struct {
		obj      *unstructured.Unstructured
		resource string
	}{{cq, "clusterqueues"}, {lq, "localqueues"}} {
		ri := worker.Dynamic.Resource(kueueObject(o.resource, "", "").GVR)
		var err error
		if ns := o.obj.GetNamespace(); ns != "" {
			_, err = ri.Namespace(ns).Create(ctx, o.obj, metav1.CreateOptions{})
		} else {
			_, err = ri.Create(ctx, o.obj, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = worker.Dynamic.Resource(kueueObject("localqueues", "", "").GVR).Namespace("default").Delete(ctx, "dispatching", metav1.DeleteOptions{})
		_ = worker.Dynamic.Resource(kueueObject("clusterqueues", "", "").GVR).Delete(ctx, "dispatching", metav1.DeleteOptions{})
	})
	out, err = w.Run("plan")
	if err != nil {
		t.Fatal(err)
	}
	out = unwrapped(out)
	if strings.Contains(out, "lacks the manager's queues") {
		t.Errorf("the plan still warns after the worker got the queues:\n%s", out)
	}
	if !strings.Contains(out, "MultiKueue worker unreachable") {
		t.Errorf("the unreachable worker's warning is gone:\n%s", out)
	}
	// Against the live clusters too: the misspelt one still warns, the
	// reachable one (now live) does not.
	if !strings.Contains(out, `no aiplatform_multikueue_cluster "reachabel"`) || strings.Contains(out, `no aiplatform_multikueue_cluster "reachable"`) {
		t.Errorf("the plan against live clusters does not warn of the misspelt worker alone:\n%s", out)
	}
}

const warnConfig = `
terraform {
  required_providers {
    aiplatform = { source = "aiplatform/aiplatform" }
  }
}

variable "kubeconfig" { type = string }
variable "worker_kubeconfig" { type = string }
variable "unreachable" {
  type      = string
  sensitive = true
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

resource "aiplatform_multikueue_cluster" "reachable" {
  name              = "reachable"
  kubeconfig_secret = "reachable-kubeconfig"
  kubeconfig_wo     = file(var.worker_kubeconfig)
}

resource "aiplatform_multikueue_cluster" "no_secret" {
  name              = "no-secret"
  kubeconfig_secret = "no-such-secret"
}

resource "aiplatform_multikueue_cluster" "unreachable" {
  name              = "unreachable"
  kubeconfig_secret = "unreachable-kubeconfig"
  kubeconfig_wo     = var.unreachable
}

resource "aiplatform_multikueue_config" "warn" {
  name     = "warn"
  clusters = [aiplatform_multikueue_cluster.reachable.name]
}

# A misspelt worker: warned at plan (clusters[1]); the reachable one, planned
# in the same run, is not.
resource "aiplatform_multikueue_config" "misspelt" {
  name     = "misspelt"
  clusters = [aiplatform_multikueue_cluster.reachable.name, "reachabel"]
}

resource "aiplatform_admission_check" "warn" {
  name            = "warn"
  controller_name = "kueue.x-k8s.io/multikueue"
  parameters      = { api_group = "kueue.x-k8s.io", kind = "MultiKueueConfig", name = aiplatform_multikueue_config.warn.name }
}

resource "aiplatform_cluster_queue" "dispatching" {
  name                      = "dispatching"
  admission_checks_strategy = [{ name = aiplatform_admission_check.warn.name }]
}

resource "aiplatform_local_queue" "dispatching" {
  name          = "dispatching"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.dispatching.name
}
`

// wrapped matches text that Terraform may have wrapped at any space.
func wrapped(text string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(text), " ", `\s+`)
}

// unwrapped joins the lines Terraform wrapped: every run of white space
// becomes one space.
func unwrapped(out string) string { return strings.Join(strings.Fields(out), " ") }
