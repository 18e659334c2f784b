package modelcache_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const ns = "default"

var (
	claims     = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	daemonSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
)

// cache is one aiplatform_model_cache block.
type cache struct {
	name, uri, revision string
	attrs               []string // extra attribute lines
}

func (c cache) hcl() string {
	rev := ""
	if c.revision != "" {
		rev = fmt.Sprintf("\n    revision = %q", c.revision)
	}
	return fmt.Sprintf(`
resource "aiplatform_model_cache" %q {
  name      = %q
  namespace = %q
  source = {
    uri = %q%s%s
  }
  %s
}
`, c.name, c.name, ns, c.uri, rev, secretLine(c.attrs), strings.Join(withoutSecret(c.attrs), "\n  "))
}

// A "secret_ref = …" line belongs inside source.
func secretLine(attrs []string) string {
	for _, a := range attrs {
		if strings.HasPrefix(a, "secret_ref") {
			return "\n    " + a
		}
	}
	return ""
}

func withoutSecret(attrs []string) []string {
	var out []string
	for _, a := range attrs {
		if !strings.HasPrefix(a, "secret_ref") {
			out = append(out, a)
		}
	}
	return out
}

func failing(message string) string {
	return fmt.Sprintf("pod_annotations = { %q = %q }\n  backoff_limit = 0", testenv.PodFailAnnotation, message)
}

func claim(name string) acctest.Object {
	return acctest.Object{GVR: claims, Namespace: ns, Name: name}
}

func daemonSet(name string) acctest.Object {
	return acctest.Object{GVR: daemonSets, Namespace: ns, Name: name}
}

func jobsOf(env *testenv.Env, cache string) ([]batchv1.Job, error) {
	list, err := env.Client.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{LabelSelector: modelcache.LabelName + "=" + cache})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// warmJob checks the cache's only Job: complete, for the revision, with the
// environment it must have.
func warmJob(env *testenv.Env, cache, revision string, env2 map[string]string, check func(*batchv1.Job) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		jobs, err := jobsOf(env, cache)
		if err != nil {
			return err
		}
		if len(jobs) != 1 {
			return fmt.Errorf("%d warm-up Jobs for %s, want 1 (older ones are removed before a new one starts)", len(jobs), cache)
		}
		j := &jobs[0]
		complete := false
		for _, c := range j.Status.Conditions {
			complete = complete || (c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue)
		}
		if !complete {
			return fmt.Errorf("job %s not complete: %+v", j.Name, j.Status)
		}
		got := map[string]string{}
		for _, e := range j.Spec.Template.Spec.InitContainers[0].Env {
			got[e.Name] = e.Value
		}
		if got["MODEL_REVISION"] != revision {
			return fmt.Errorf("job %s warms revision %q, want %q", j.Name, got["MODEL_REVISION"], revision)
		}
		for k, v := range env2 {
			if got[k] != v {
				return fmt.Errorf("job %s: env %s = %q, want %q", j.Name, k, got[k], v)
			}
		}
		if check != nil {
			return check(j)
		}
		return nil
	}
}

func noJobs(env *testenv.Env, cache string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		jobs, err := jobsOf(env, cache)
		if err != nil {
			return err
		}
		if len(jobs) != 0 {
			return fmt.Errorf("%d warm-up Jobs of %s left", len(jobs), cache)
		}
		return nil
	}
}

func deleteJobs(t *testing.T, env *testenv.Env, cache string) {
	t.Helper()
	jobs, err := jobsOf(env, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) == 0 {
		t.Fatalf("no Job of %s to delete", cache)
	}
	policy := metav1.DeletePropagationBackground
	for _, j := range jobs {
		if err := env.Client.BatchV1().Jobs(ns).Delete(context.Background(), j.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
	}
}

// uid records or compares a live object's UID: kept means not replaced.
type uid struct{ value string }

func (u *uid) record(env *testenv.Env, o acctest.Object) resource.TestCheckFunc {
	return o.Check(env, func(obj map[string]any) error {
		u.value = fmt.Sprint(obj["metadata"].(map[string]any)["uid"])
		return nil
	})
}

func (u *uid) same(env *testenv.Env, o acctest.Object, want bool) resource.TestCheckFunc {
	return o.Check(env, func(obj map[string]any) error {
		got := fmt.Sprint(obj["metadata"].(map[string]any)["uid"])
		if (got == u.value) != want {
			return fmt.Errorf("%s: uid %s, before %s: want same=%v", o.Name, got, u.value, want)
		}
		u.value = got
		return nil
	})
}

func createSecret(t *testing.T, env *testenv.Env, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	if _, err := env.Client.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Secrets(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func emptyPlan() resource.ConfigPlanChecks {
	return resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
}

func expect(action plancheck.ResourceActionType, addr string) resource.ConfigPlanChecks {
	return resource.ConfigPlanChecks{
		PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, action)},
		PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
	}
}

// A claim filled by a Job: created bound and warm, a Job garbage-collected
// after success is no drift, a new revision re-warms in place (same claim),
// import, a claim deleted out of band is created again, a new size replaces.
func TestAccModelCachePVC(t *testing.T) {
	env := acctest.Env(t)
	const uri = "hf://meta-llama/Llama-3.1-8B-Instruct"
	addr := "aiplatform_model_cache.llama"
	c := cache{name: "llama", uri: uri, revision: "r1", attrs: []string{`secret_ref = { name = "hf-token" }`, `size = "20Gi"`}}
	r2 := c
	r2.revision = "r2"
	bigger := r2
	bigger.attrs = []string{`secret_ref = { name = "hf-token" }`, `size = "40Gi"`}
	sub1, sub2 := modelcache.SubPath(uri, "r1"), modelcache.SubPath(uri, "r2")
	var claimUID uid
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			claim("llama").Gone(env), noJobs(env, "llama"),
		),
		Steps: []resource.TestStep{
			{
				PreConfig:        func() { createSecret(t, env, "hf-token", map[string]string{"HF_TOKEN": "hf_test"}) },
				Config:           acctest.Provider(env) + c.hcl(),
				ConfigPlanChecks: emptyPlan(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/llama"),
					resource.TestCheckResourceAttr(addr, "mode", "pvc"),
					resource.TestCheckResourceAttr(addr, "claim_name", "llama"),
					resource.TestCheckResourceAttr(addr, "storage_class", testenv.StorageClass),
					resource.TestCheckResourceAttr(addr, "access_modes.#", "1"),
					resource.TestCheckResourceAttr(addr, "access_modes.0", "ReadWriteMany"),
					resource.TestCheckResourceAttr(addr, "mount_path", "/models/llama"),
					resource.TestCheckResourceAttr(addr, "sub_path", sub1),
					resource.TestCheckResourceAttr(addr, "warmed_revision", "r1"),
					resource.TestCheckResourceAttrSet(addr, "warmed_at"),
					resource.TestCheckNoResourceAttr(addr, "host_path"),
					resource.TestCheckResourceAttr(addr, "downloader.image", modelcache.DefaultDownloader(modelcache.SchemeHF).Image),
					claim("llama").Equal(env, "Bound", "status", "phase"),
					claim("llama").Equal(env, "20Gi", "spec", "resources", "requests", "storage"),
					claim("llama").Equal(env, "r1", "metadata", "annotations", modelcache.AnnotationWarmedRevision),
					claim("llama").Equal(env, sub1, "metadata", "annotations", modelcache.AnnotationSubPath),
					warmJob(env, "llama", "r1", map[string]string{"MODEL_REPO": "meta-llama/Llama-3.1-8B-Instruct", "MODEL_CACHE_DIR": "/model-cache/" + sub1}, func(j *batchv1.Job) error {
						c := j.Spec.Template.Spec.InitContainers[0]
						if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "hf-token" {
							return fmt.Errorf("envFrom %+v", c.EnvFrom)
						}
						if v := j.Spec.Template.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "llama" {
							return fmt.Errorf("volume %+v", v)
						}
						return nil
					}),
					claimUID.record(env, claim("llama")),
				),
			},
			{
				// The Job is garbage-collected after success (ttlSecondsAfterFinished):
				// the claim still says what is warm, so no drift.
				PreConfig: func() { deleteJobs(t, env, "llama") },
				Config:    acctest.Provider(env) + c.hcl(),
				PlanOnly:  true,
			},
			{
				// A new revision: fetched into the same claim, beside the old one.
				Config:           acctest.Provider(env) + r2.hcl(),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, addr),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "warmed_revision", "r2"),
					resource.TestCheckResourceAttr(addr, "sub_path", sub2),
					claimUID.same(env, claim("llama"), true),
					claim("llama").Equal(env, "r2", "metadata", "annotations", modelcache.AnnotationWarmedRevision),
					warmJob(env, "llama", "r2", map[string]string{"MODEL_CACHE_DIR": "/model-cache/" + sub2, "MODEL_CACHE_KEEP": sub1}, nil),
				),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "default/llama",
				ImportStateVerify: true,
			},
			{
				// Deleted out of band: the plan creates it again.
				PreConfig: func() {
					deleteJobs(t, env, "llama")
					claim("llama").Delete(t, env)
				},
				Config:             acctest.Provider(env) + r2.hcl(),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config:           acctest.Provider(env) + r2.hcl(),
				ConfigPlanChecks: expect(plancheck.ResourceActionCreate, addr),
				Check: resource.ComposeAggregateTestCheckFunc(
					claimUID.same(env, claim("llama"), false),
					claim("llama").Equal(env, "r2", "metadata", "annotations", modelcache.AnnotationWarmedRevision),
					resource.TestCheckResourceAttr(addr, "warmed_revision", "r2"),
				),
			},
			{
				// A claim's size is fixed once bound: a new size replaces it.
				Config:           acctest.Provider(env) + bigger.hcl(),
				ConfigPlanChecks: expect(plancheck.ResourceActionDestroyBeforeCreate, addr),
				Check: resource.ComposeAggregateTestCheckFunc(
					claimUID.same(env, claim("llama"), false),
					claim("llama").Equal(env, "40Gi", "spec", "resources", "requests", "storage"),
					resource.TestCheckResourceAttr(addr, "size", "40Gi"),
				),
			},
		},
	})
}

// A failed warm-up fails the apply with the Job's reason, the container's
// exit and message, and says why the log cannot be read (kwok nodes have no
// kubelet); state keeps the revision that is really there.
func TestAccModelCacheFailure(t *testing.T) {
	env := acctest.Env(t)
	const uri = "s3://models/mistral/7b"
	addr := "aiplatform_model_cache.mistral"
	good := cache{name: "mistral", uri: uri, revision: "v1", attrs: []string{`size = "10Gi"`}}
	bad := good
	bad.revision = "v2"
	bad.attrs = []string{`size = "10Gi"`, failing("An error occurred (AccessDenied) when calling the ListObjectsV2 operation")}
	fixed := good
	fixed.revision = "v2"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(claim("mistral").Gone(env), noJobs(env, "mistral")),
		Steps: []resource.TestStep{
			{Config: acctest.Provider(env) + good.hcl(), ConfigPlanChecks: emptyPlan()},
			{
				Config: acctest.Provider(env) + bad.hcl(),
				ExpectError: acctest.ErrorMatching(
					"Warming model cache default/mistral failed",
					"failed after", "BackoffLimitExceeded",
					`container "download" exited with code 1 (Error)`, "AccessDenied",
					`The log of container "download" could not be read`, "pod logs unavailable", "fake (kwok) nodes have none",
					"The cache still holds revision v1",
				),
			},
			{
				// State does not claim v2: it still says v1, as the claim does
				// (so the plan after the refresh still proposes v2).
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "source.revision", "v1"),
					resource.TestCheckResourceAttr(addr, "warmed_revision", "v1"),
					resource.TestCheckResourceAttr(addr, "sub_path", modelcache.SubPath(uri, "v1")),
					claim("mistral").Equal(env, "v1", "metadata", "annotations", modelcache.AnnotationWarmedRevision),
				),
			},
			{
				// So the plan still proposes v2.
				Config:             acctest.Provider(env) + fixed.hcl(),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config:           acctest.Provider(env) + fixed.hcl(),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, addr),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "warmed_revision", "v2"),
					warmJob(env, "mistral", "v2", map[string]string{"MODEL_BUCKET": "models", "MODEL_PREFIX": "mistral/7b"}, nil),
				),
			},
		},
	})
}

// A first warm-up that fails leaves the cache tainted; the next apply
// replaces it, and destroy removes the claim and the failed Job.
func TestAccModelCacheCreateFailure(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_model_cache.broken"
	bad := cache{name: "broken", uri: "https://example.com/models/tiny.tar.gz", attrs: []string{`size = "1Gi"`, failing("wget: server returned error: HTTP/1.1 404 Not Found")}}
	good := cache{name: "broken", uri: "https://example.com/models/tiny.tar.gz", attrs: []string{`size = "1Gi"`}}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(claim("broken").Gone(env), noJobs(env, "broken")),
		Steps: []resource.TestStep{
			{
				Config:      acctest.Provider(env) + bad.hcl(),
				ExpectError: acctest.ErrorMatching("Warming model cache default/broken failed", "BackoffLimitExceeded", "404 Not Found"),
			},
			{
				Config:           acctest.Provider(env) + good.hcl(),
				ConfigPlanChecks: expect(plancheck.ResourceActionDestroyBeforeCreate, addr),
				Check:            resource.TestCheckResourceAttr(addr, "warmed_revision", "latest"),
			},
		},
	})
}

// retain_on_destroy keeps the claim and its weights.
func TestAccModelCacheRetain(t *testing.T) {
	env := acctest.Env(t)
	c := cache{name: "kept", uri: "gs://models/gemma", attrs: []string{`size = "5Gi"`, `retain_on_destroy = true`, `access_modes = ["ReadWriteOnce"]`}}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), "kept", metav1.DeleteOptions{})
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			claim("kept").Equal(env, "latest", "metadata", "annotations", modelcache.AnnotationWarmedRevision),
			noJobs(env, "kept"),
		),
		Steps: []resource.TestStep{{
			Config:           acctest.Provider(env) + c.hcl(),
			ConfigPlanChecks: emptyPlan(),
			Check:            claim("kept").Equal(env, "ReadWriteOnce", "spec", "accessModes", "0"),
		}},
	})
}

// node_local: a DaemonSet on the pool's nodes, Ready once every node is warm;
// an out-of-band edit shows in the plan (and is a conflict unless
// force_conflicts); a new revision rolls every node; a failed one is set back.
func TestAccModelCacheNodeLocal(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_model_cache.local"
	base := func(tag string, extra ...string) cache {
		return cache{name: "local", uri: "oci://registry.example.com/models/llama:" + tag, attrs: append([]string{`mode = "node_local"`, `node_selector = { testpool = "mc" }`}, extra...)}
	}
	v1, v2 := base("v1"), base("v2")
	v3bad := base("v3", failing("oras: failed to resolve v3: not found"))
	sub1 := modelcache.SubPath(v1.uri, "v1")
	sub2 := modelcache.SubPath(v2.uri, "v2")
	editImage := func() {
		daemonSet("local").Edit(t, env, "kubectl-edit", func(obj map[string]any) {
			inits := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["initContainers"].([]any)
			inits[0].(map[string]any)["image"] = "example.com/patched-oras:latest"
		})
	}
	dsCheck := func(check func(ds *appsv1.DaemonSet) error) resource.TestCheckFunc {
		return func(*terraform.State) error {
			ds, err := env.Client.AppsV1().DaemonSets(ns).Get(context.Background(), "local", metav1.GetOptions{})
			if err != nil {
				return err
			}
			return check(ds)
		}
	}
	initEnv := func(name, want string) resource.TestCheckFunc {
		return dsCheck(func(ds *appsv1.DaemonSet) error {
			for _, e := range ds.Spec.Template.Spec.InitContainers[0].Env {
				if e.Name == name {
					if e.Value != want {
						return fmt.Errorf("DaemonSet env %s = %q, want %q", name, e.Value, want)
					}
					return nil
				}
			}
			if want != "" {
				return fmt.Errorf("DaemonSet has no env %s", name)
			}
			return nil
		})
	}
	warmOnPool := dsCheck(func(ds *appsv1.DaemonSet) error {
		st := ds.Status
		if st.DesiredNumberScheduled != 2 || st.NumberReady != 2 || st.UpdatedNumberScheduled != 2 {
			return fmt.Errorf("DaemonSet status %+v, want 2 nodes ready and up to date", st)
		}
		return nil
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		CheckDestroy:             daemonSet("local").Gone(env),
		Steps: []resource.TestStep{
			{
				Config:           acctest.Provider(env) + v1.hcl(),
				ConfigPlanChecks: emptyPlan(),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "host_path", "/var/lib/model-cache/default/local"),
					resource.TestCheckNoResourceAttr(addr, "claim_name"),
					resource.TestCheckNoResourceAttr(addr, "access_modes"),
					resource.TestCheckResourceAttr(addr, "warmed_revision", "v1"),
					resource.TestCheckResourceAttr(addr, "sub_path", sub1),
					resource.TestCheckResourceAttr(addr, "downloader.image", modelcache.DefaultDownloader(modelcache.SchemeOCI).Image),
					warmOnPool,
					initEnv("MODEL_REF", "registry.example.com/models/llama:v1"),
					daemonSet("local").Equal(env, "v1", "metadata", "annotations", modelcache.AnnotationWarmedRevision),
					daemonSet("local").Equal(env, "mc", "spec", "template", "spec", "nodeSelector", "testpool"),
					daemonSet("local").Equal(env, "/var/lib/model-cache/default/local", "spec", "template", "spec", "volumes", "0", "hostPath", "path"),
					noJobs(env, "local"),
				),
			},
			{
				// Someone changes the downloader's image with kubectl edit.
				PreConfig:          editImage,
				Config:             acctest.Provider(env) + v1.hcl(),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Taking the field back from kubectl-edit needs force_conflicts.
				Config:      acctest.Provider(env) + v1.hcl(),
				ExpectError: acctest.ErrorMatching("kubectl-edit", "force_conflicts"),
			},
			{
				Config:           acctest.Provider(env, "force_conflicts = true") + v1.hcl(),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, addr),
				Check: resource.ComposeAggregateTestCheckFunc(
					daemonSet("local").Equal(env, modelcache.DefaultDownloader(modelcache.SchemeOCI).Image, "spec", "template", "spec", "initContainers", "0", "image"),
					resource.TestCheckResourceAttr(addr, "warmed_revision", "v1"),
					warmOnPool,
				),
			},
			{
				Config:           acctest.Provider(env) + v2.hcl(),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, addr),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "warmed_revision", "v2"),
					resource.TestCheckResourceAttr(addr, "sub_path", sub2),
					initEnv("MODEL_REF", "registry.example.com/models/llama:v2"),
					initEnv("MODEL_CACHE_KEEP", sub1),
					warmOnPool,
				),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "default/local",
				ImportStateVerify: true,
			},
			{
				Config:      acctest.Provider(env) + v3bad.hcl(),
				ExpectError: acctest.ErrorMatching("Warming model cache default/local failed", "failed", "The cache still holds revision v2", "set back to its previous template"),
			},
			{
				RefreshState:       true,
				ExpectNonEmptyPlan: true, // v3 is still to do
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "warmed_revision", "v2"),
					resource.TestCheckResourceAttr(addr, "source.uri", v2.uri),
					initEnv("MODEL_REF", "registry.example.com/models/llama:v2"),
					dsCheck(func(ds *appsv1.DaemonSet) error {
						if _, ok := ds.Spec.Template.Annotations[testenv.PodFailAnnotation]; ok {
							return fmt.Errorf("the failed template is still in place")
						}
						return nil
					}),
				),
			},
			{
				Config:   acctest.Provider(env) + v2.hcl(),
				PlanOnly: true,
			},
		},
	})
}

// Bad input fails the plan, naming the attribute, and creates nothing; a
// missing Secret fails the apply before anything is created.
func TestAccModelCacheValidation(t *testing.T) {
	env := acctest.Env(t)
	plan := func(c cache, parts ...string) resource.TestStep {
		return resource.TestStep{Config: acctest.Provider(env) + c.hcl(), PlanOnly: true, ExpectError: acctest.ErrorMatching(parts...)}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			claim("bad").Gone(env), daemonSet("bad").Gone(env), noJobs(env, "bad"),
		),
		Steps: []resource.TestStep{
			plan(cache{name: "bad", uri: "ftp://models/llama", attrs: []string{`size = "1Gi"`}}, "Unsupported model source", `source.uri: "ftp://models/llama": unknown scheme "ftp"`, "hf://, s3://, gs://, oci://, https://"),
			plan(cache{name: "bad", uri: "hf://org/model", attrs: []string{`size = "lots"`}}, "size", "quantit"),
			plan(cache{name: "bad", uri: "hf://org/model"}, "Missing size", "size: mode \"pvc\" needs the claim's size"),
			plan(cache{name: "bad", uri: "hf://org/model", attrs: []string{`mode = "node_local"`}}, "Missing node_selector", "node_selector: mode \"node_local\" warms the nodes"),
			plan(cache{name: "bad", uri: "hf://org/model", attrs: []string{`size = "1Gi"`, `node_selector = { testpool = "mc" }`}}, "node_selector applies to mode \"node_local\" only"),
			plan(cache{name: "bad", uri: "oci://r.example.com/m:v1", revision: "v2", attrs: []string{`size = "1Gi"`}}, "source.revision", "set the tag or digest in one place only"),
			plan(cache{name: "bad", uri: "hf://org/model", attrs: []string{`size = "1Gi"`, `timeout = "forever"`}}, "timeout", "not a duration"),
			{
				Config:      acctest.Provider(env) + cache{name: "bad", uri: "hf://org/model", attrs: []string{`size = "1Gi"`, `secret_ref = { name = "no-such-secret" }`}}.hcl(),
				ExpectError: acctest.ErrorMatching("The source's Secret does not exist", `source.secret_ref: there is no Secret "no-such-secret" in namespace "default"`),
			},
			{
				Config:      acctest.Provider(env) + cache{name: "bad", uri: "hf://org/model", attrs: []string{`size = "1Gi"`, `storage_class = "fast-nfs"`}}.hcl(),
				ExpectError: acctest.ErrorMatching("The StorageClass does not exist", `storage_class: there is no StorageClass "fast-nfs"`),
			},
			{
				// Nothing was created by any of the above (checked before the
				// test's destroy could hide it).
				PreConfig: func() {
					for _, o := range []acctest.Object{claim("bad"), daemonSet("bad")} {
						if obj, err := o.Get(env); err != nil || obj != nil {
							t.Fatalf("%s %s exists after failed plans (err %v)", o.GVR.Resource, o.Name, err)
						}
					}
					if jobs, err := jobsOf(env, "bad"); err != nil || len(jobs) > 0 {
						t.Fatalf("warm-up Jobs exist after failed plans: %d (err %v)", len(jobs), err)
					}
				},
				Config:             acctest.Provider(env) + cache{name: "bad", uri: "hf://org/model", attrs: []string{`size = "1Gi"`}}.hcl(),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}
