package installs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

var (
	mpiNamespace   = object("", "v1", "namespaces", "", "mpi-operator")
	mpiDeployment  = object("apps", "v1", "deployments", "mpi-operator", "mpi-operator")
	mpiRole        = object("rbac.authorization.k8s.io", "v1", "clusterroles", "", "mpi-operator")
	mpiBinding     = object("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "", "mpi-operator")
	mpiCRD         = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "mpijobs.kubeflow.org")
	mpiRecord      = object("", "v1", "secrets", "mpi-operator", "aiplatform.manifests.mpi-operator")
	mpiJobPi       = object("kubeflow.org", "v2beta1", "mpijobs", "default", "pi")
	mpiJobResource = mpiJobPi.GVR
)

// mpiOperatorFile is deploy/v2beta1/mpi-operator.yaml of the
// github.com/kubeflow/mpi-operator module of the default version in the Go
// module cache; mpiOperatorFileAt that of another version.
func mpiOperatorFile(t *testing.T) string { return mpiOperatorFileAt(t, podrunner.MPIOperatorVersion) }

func mpiOperatorFileAt(t *testing.T, version string) string {
	t.Helper()
	dir, err := testenv.ModuleDir(context.Background(), "github.com/kubeflow/mpi-operator", version)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "deploy", "v2beta1", "mpi-operator.yaml")
}

func mpiOperatorBlock(t *testing.T, name, extra string) string {
	return fmt.Sprintf(`
resource "aiplatform_mpi_operator" %q {
  manifests = { path = %q }
  timeout   = "3m"
%s
}
`, name, mpiOperatorFile(t), extra)
}

// mpiJobRuns creates MPIJob name (1 launcher, 2 workers) in default and
// waits until the installed operator — the real MPI Operator, run by
// testenv's pod runner for the Deployment's pod — has made its launcher and
// worker pods, hostfile and SSH Secret. The wait bounds a broken cluster; it
// is not a timing assertion.
func mpiJobRuns(env *testenv.Env, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		container := func(name string, command ...any) map[string]any {
			return map[string]any{"containers": []any{map[string]any{"name": name, "image": "mpioperator/mpi-pi:openmpi", "command": command}}}
		}
		job := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec": map[string]any{
				"slotsPerWorker": int64(1), "sshAuthMountPath": "/home/mpiuser/.ssh",
				"mpiReplicaSpecs": map[string]any{
					"Launcher": map[string]any{"replicas": int64(1), "template": map[string]any{"spec": container("launcher", "mpirun", "-n", "2", "/home/mpiuser/pi")}},
					"Worker":   map[string]any{"replicas": int64(2), "template": map[string]any{"spec": container("worker", "/usr/sbin/sshd", "-De")}},
				},
			},
		}}
		if _, err := env.Dynamic.Resource(mpiJobResource).Namespace("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating MPIJob %s through the installed CRD: %w", name, err)
		}
		oneLauncherTwoWorkers := acctest.PodsWant{What: "1 launcher and 2 worker pods", OK: func(pods []corev1.Pod) bool {
			roles := map[string]int{}
			for _, p := range pods {
				roles[p.Labels["training.kubeflow.org/job-role"]]++
			}
			return roles["launcher"] == 1 && roles["worker"] == 2
		}}
		if _, err := (acctest.Pods{Namespace: "default", Selector: "training.kubeflow.org/job-name=" + name}).Await(env, 2*time.Minute, oneLauncherTwoWorkers); err != nil {
			return fmt.Errorf("MPIJob %s: %w", name, err)
		}
		cm, err := env.Client.CoreV1().ConfigMaps("default").Get(ctx, name+"-config", metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("MPIJob %s's ConfigMap: %w", name, err)
		}
		if h := cm.Data["hostfile"]; !strings.Contains(h, name+"-worker-0") || !strings.Contains(h, name+"-worker-1") {
			return fmt.Errorf("MPIJob %s's hostfile %q does not list both workers", name, h)
		}
		if _, err := env.Client.CoreV1().Secrets("default").Get(ctx, name+"-ssh", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("MPIJob %s's SSH Secret: %w", name, err)
		}
		return nil
	}
}

// crdEstablished checks the CRD's Established condition.
func crdEstablished(env *testenv.Env) resource.TestCheckFunc {
	return mpiCRD.Check(env, func(obj map[string]any) error {
		conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Established" && c["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("CRD %s not Established: %v", mpiCRD.Name, conds)
	})
}

func ruleCount(env *testenv.Env, want int) resource.TestCheckFunc {
	return mpiRole.Check(env, func(obj map[string]any) error {
		rules, _, _ := unstructured.NestedSlice(obj, "rules")
		if len(rules) != want {
			return fmt.Errorf("ClusterRole mpi-operator has %d rules, want %d", len(rules), want)
		}
		return nil
	})
}

// The MPI Operator from its manifest file in the module cache: install of
// the previous default, v0.8.0 (CRD Established, the Deployment's pod run as
// the real operator), an MPIJob through it gets its launcher and workers;
// the upgrade in place to the default, v0.8.2, under that MPIJob (issue
// #29: the job and its pods kept, the new operator runs and makes a second
// job's pods, the next plan empty); drift of the
// Deployment, the RBAC and the CRD, and a deleted Deployment, planned and
// put back; import; another namespace (a replacement, the operator running
// there); destroy keeps the CRD (and the MPIJob) by default and removes
// everything else.
func TestAccMPIOperator(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_mpi_operator.this"
	cfg := acctest.Provider(env) + mpiOperatorBlock(t, "this", "")
	previous := podrunner.MPIOperatorPreviousVersion
	previousCfg := acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_mpi_operator" "this" {
  version   = %q
  manifests = { path = %q }
  timeout   = "3m"
}
`, previous, mpiOperatorFileAt(t, previous))
	live := map[string]string{} // the MPIJob's and its pods' UIDs, by name
	movedCfg := acctest.Provider(env) + mpiOperatorBlock(t, "this", `  namespace = "mpi-jobs"`)
	movedDeployment := object("apps", "v1", "deployments", "mpi-jobs", "mpi-operator")
	var rules int
	t.Cleanup(func() { removeMPIJobCRD(t, env) })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { acctest.AwaitMPIOperatorPort(t) },
				Config:    previousCfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "mpi-operator"),
					resource.TestCheckResourceAttr(addr, "namespace", "mpi-operator"),
					resource.TestCheckResourceAttr(addr, "version", previous),
					resource.TestCheckResourceAttr(addr, "image", "mpioperator/mpi-operator:"+strings.TrimPrefix(previous, "v")),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					mpiDeployment.Equal(env, 1, "status", "readyReplicas"),
					mpiDeployment.Equal(env, "--lock-namespace=mpi-operator", "spec", "template", "spec", "containers", "0", "args", "1"),
					mpiBinding.Equal(env, "mpi-operator", "subjects", "0", "namespace"),
					crdEstablished(env),
					mpiRecord.Equal(env, "aiplatform.io/manifest-set.v1", "type"),
					mpiRole.Check(env, func(obj map[string]any) error {
						r, _, _ := unstructured.NestedSlice(obj, "rules")
						if rules = len(r); rules < 5 {
							return fmt.Errorf("ClusterRole mpi-operator has %d rules", rules)
						}
						return nil
					}),
					mpiJobRuns(env, "pi"),
					mpiOperatorRuns(env, previous),
					recordUIDs(env, live),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The upgrade to the default version, in place, under the
				// running MPIJob: the manifests differ only in the image.
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "version", podrunner.MPIOperatorVersion),
					resource.TestCheckResourceAttr(addr, "image", "mpioperator/mpi-operator:"+strings.TrimPrefix(podrunner.MPIOperatorVersion, "v")),
					mpiOperatorRuns(env, podrunner.MPIOperatorVersion),
					sameUIDs(env, live),
					mpiJobRuns(env, "pi-after-upgrade"),
				),
			},
			{
				// Out of band: the Deployment scaled, a rule cut from the
				// operator's ClusterRole, a label of the CRD changed.
				PreConfig: func() {
					mpiDeployment.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["spec"].(map[string]any)["replicas"] = int64(2)
					})
					mpiRole.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						r := obj["rules"].([]any)
						obj["rules"] = r[:len(r)-1]
					})
					mpiCRD.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["metadata"].(map[string]any)["labels"].(map[string]any)["app"] = "edited"
					})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{
							"Deployment/mpi-operator/mpi-operator: spec.replicas 2 → 1",
							"ClusterRole/mpi-operator: rules",
							"CustomResourceDefinition/mpijobs.kubeflow.org: metadata.labels.app edited → mpi-operator",
						}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					mpiDeployment.Equal(env, 1, "spec", "replicas"),
					mpiCRD.Equal(env, "mpi-operator", "metadata", "labels", "app"),
					func(s *terraform.State) error { return ruleCount(env, rules)(s) },
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
				),
			},
			{
				// Out of band: the operator's Deployment deleted.
				PreConfig: func() { mpiDeployment.Delete(t, env); acctest.AwaitMPIOperatorPort(t) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{"Deployment/mpi-operator/mpi-operator: deleted from the cluster"}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: mpiDeployment.Equal(env, 1, "status", "readyReplicas"),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "mpi-operator", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"timeout"},
			},
			{
				// Another namespace replaces the install: the file's
				// namespace is rewritten wherever the operator reads it, and
				// the operator runs there (the old one is removed first).
				// (No wait for :8080: this test's operator holds it until the
				// replacement removes it.)
				Config: movedCfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "mpi-jobs"),
					mpiDeployment.Gone(env), mpiNamespace.Gone(env),
					movedDeployment.Equal(env, 1, "status", "readyReplicas"),
					movedDeployment.Equal(env, "--lock-namespace=mpi-jobs", "spec", "template", "spec", "containers", "0", "args", "1"),
					mpiBinding.Equal(env, "mpi-jobs", "subjects", "0", "namespace"),
					object("", "v1", "serviceaccounts", "mpi-jobs", "mpi-operator").Equal(env, "mpi-operator", "metadata", "name"),
				),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "mpi-jobs", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"timeout"},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			movedDeployment.Gone(env), object("", "v1", "namespaces", "", "mpi-jobs").Gone(env),
			mpiDeployment.Gone(env), mpiNamespace.Gone(env), mpiRole.Gone(env), mpiBinding.Gone(env), mpiRecord.Gone(env),
			// remove_crds = false: the CRD, and the MPIJob, stay.
			crdEstablished(env), mpiJobPi.Equal(env, "pi", "metadata", "name"),
		),
	})
}

// removeMPIJobCRD deletes the CRD a test kept (and with it its MPIJobs), so
// that the next test starts from a cluster without the MPI Operator.
func removeMPIJobCRD(t *testing.T, env *testenv.Env) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := env.Dynamic.Resource(mpiCRD.GVR).Delete(ctx, mpiCRD.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting CRD %s: %v", mpiCRD.Name, err)
		return
	}
	for ctx.Err() == nil {
		if obj, err := mpiCRD.Get(env); err == nil && obj == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("CRD %s not deleted", mpiCRD.Name)
}

// Bad input is refused at plan, with the attribute or both conflicting
// controllers named, and creates nothing.
func TestAccMPIOperatorBadInput(t *testing.T) {
	env := acctest.Env(t)
	notMPI := filepath.Join(t.TempDir(), "not-mpi.yaml")
	if err := os.WriteFile(notMPI, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := mpiOperatorFile(t)
	block := func(body string) string {
		return acctest.Provider(env) + fmt.Sprintf("resource \"aiplatform_mpi_operator\" \"this\" {\n%s\n}\n", body)
	}
	var steps []resource.TestStep
	for _, c := range []struct {
		body string
		want *regexp.Regexp
	}{
		{fmt.Sprintf("manifests = { path = %q, url = \"https://example.com/x.yaml\" }", file), acctest.ErrorMatching("Conflicting manifest source", "set either url or path")},
		{"manifests = {}", acctest.ErrorMatching("Empty manifest source")},
		{`manifests = { url = "ftp://example.com/mpi-operator.yaml" }`, acctest.ErrorMatching("Invalid manifests URL", "ftp://")},
		{fmt.Sprintf("manifests = { path = %q }", filepath.Join(t.TempDir(), "missing.yaml")), acctest.ErrorMatching("Cannot read the MPI Operator's manifests", "manifests.path", "missing.yaml")},
		{fmt.Sprintf("manifests = { path = %q }", notMPI), acctest.ErrorMatching("Unusable MPI Operator manifests", "manifests.path", "no Deployment \"mpi-operator\"")},
		{fmt.Sprintf("manifests = { path = %q }\n  version = \"v0.7.0\"", file), acctest.ErrorMatching("Unusable MPI Operator manifests", "manifests.path", "mpioperator/mpi-operator:"+strings.TrimPrefix(podrunner.MPIOperatorVersion, "v"), "not version v0.7.0")},
		{fmt.Sprintf("manifests = { path = %q }\n  version = \"latest\"", file), acctest.ErrorMatching("Invalid version", "latest")},
		{fmt.Sprintf("manifests = { path = %q }\n  namespace = \"MPI_Operator\"", file), acctest.ErrorMatching("namespace", "DNS-1123 label")},
		{fmt.Sprintf("manifests = { path = %q }\n  timeout = \"soon\"", file), acctest.ErrorMatching("timeout")},
		{fmt.Sprintf("manifests = { path = %q }\n  image = \"\"", file), acctest.ErrorMatching("image", "must not be empty")},
		{fmt.Sprintf("manifests = { path = %q }\n  image = \"mpioperator/mpi-operator:\"", file), acctest.ErrorMatching("Invalid image")},
	} {
		steps = append(steps, resource.TestStep{Config: block(c.body), PlanOnly: true, ExpectError: c.want})
	}
	// Two MPI Operators in one configuration.
	two := acctest.Provider(env) + mpiOperatorBlock(t, "a", `  namespace = "mpi-a"`) + mpiOperatorBlock(t, "b", `  namespace = "mpi-b"`)
	steps = append(steps, resource.TestStep{Config: two, PlanOnly: true,
		ExpectError: acctest.ErrorMatching("Another controller reconciles MPIJobs", "aiplatform_mpi_operator in namespace mpi-", "is planned in this configuration")})
	// The Kubeflow training-operator v1 with its MPIJob controller on (no
	// --enable-scheme), as its upstream manifests deploy it.
	training := acctest.Provider(env) + mpiOperatorBlock(t, "this", "")
	steps = append(steps, resource.TestStep{
		PreConfig: func() { createTrainingOperator(t, env, nil) },
		Config:    training, PlanOnly: true,
		ExpectError: acctest.ErrorMatching("Another controller reconciles MPIJobs", "aiplatform_mpi_operator in namespace mpi-operator",
			"Kubeflow training-operator in namespace kubeflow", "Deployment kubeflow/training-operator", "--enable-scheme"),
	})
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: acctest.Factories, Steps: steps})

	// With MPIJob turned off in the training-operator, the plan passes.
	createTrainingOperator(t, env, []string{"--enable-scheme=pytorchjob", "--enable-scheme=tfjob"})
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: acctest.Factories, Steps: []resource.TestStep{
		{Config: training, PlanOnly: true, ExpectNonEmptyPlan: true},
	}})
	for _, o := range []acctest.Object{mpiNamespace, mpiDeployment, mpiRole,
		object("", "v1", "namespaces", "", "mpi-a"), object("", "v1", "namespaces", "", "mpi-b")} {
		if err := o.Gone(env)(nil); err != nil {
			t.Errorf("a refused plan created something: %v", err)
		}
	}
}

// createTrainingOperator creates (or updates) a Deployment as the Kubeflow
// training-operator v1's manifests deploy it, with the given args; deleted
// when the test ends. Its pod is kwok's (no adapter runs that image).
func createTrainingOperator(t *testing.T, env *testenv.Env, args []string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubeflow"}}
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"control-plane": "kubeflow-training-operator"}
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "training-operator", Namespace: "kubeflow", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "training-operator", Image: "kubeflow/training-operator:v1-855e096", Command: []string{"/manager"}, Args: args,
				}}},
			},
		},
	}
	deps := env.Client.AppsV1().Deployments("kubeflow")
	if cur, err := deps.Get(ctx, dep.Name, metav1.GetOptions{}); err == nil {
		cur.Spec = dep.Spec
		if _, err := deps.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := deps.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), "kubeflow", metav1.DeleteOptions{})
	})
}

// mpiOperatorRuns waits until the operator's pod is Ready with its process
// running the testenv-built operator of version (the binary's name carries
// it) and the pod of any other version gone. The wait bounds a broken
// cluster; it is not a timing assertion.
func mpiOperatorRuns(env *testenv.Env, version string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		want := acctest.PodsWant{What: "one Ready operator pod running " + version, OK: func(pods []corev1.Pod) bool {
			if len(pods) != 1 || pods[0].DeletionTimestamp != nil {
				return false
			}
			for _, cs := range pods[0].Status.ContainerStatuses {
				pid, ok := strings.CutPrefix(cs.ContainerID, "testenv://")
				if !ok || !cs.Ready {
					return false
				}
				exe, err := os.Readlink("/proc/" + pid + "/exe")
				return err == nil && strings.Contains(filepath.Base(exe), version)
			}
			return false
		}}
		_, err := (acctest.Pods{Namespace: "mpi-operator", Selector: "app=mpi-operator"}).Await(env, 2*time.Minute, want)
		return err
	}
}

// recordUIDs notes MPIJob pi's UID and its pods'; sameUIDs checks they are
// all still there, none replaced.
func recordUIDs(env *testenv.Env, into map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := jobUIDs(env)
		for k, v := range got {
			into[k] = v
		}
		return err
	}
}

func sameUIDs(env *testenv.Env, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := jobUIDs(env)
		if err != nil {
			return err
		}
		if len(want) < 4 || fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("MPIJob pi and its pods after the upgrade: %v, before: %v (want the same objects, none replaced)", got, want)
		}
		return nil
	}
}

func jobUIDs(env *testenv.Env) (map[string]string, error) {
	out := map[string]string{}
	job, err := mpiJobPi.Get(env)
	if err != nil || job == nil {
		return out, fmt.Errorf("MPIJob pi: %v (present: %v)", err, job != nil)
	}
	out["mpijob/pi"] = string(job.GetUID())
	pods, err := (acctest.Pods{Namespace: "default", Selector: "training.kubeflow.org/job-name=pi"}).List(env)
	for _, p := range pods {
		out["pod/"+p.Name] = string(p.UID)
	}
	return out, err
}
