package training_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const ns = "default"

func claim(name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Namespace: ns, Name: name}
}

func cronJob(name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, Namespace: ns, Name: name}
}

func configMap(name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: ns, Name: name}
}

func emptyAfter(pre ...plancheck.PlanCheck) resource.ConfigPlanChecks {
	return resource.ConfigPlanChecks{PreApply: pre, PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
}

// bound waits until the claim is bound (the provisioner and binder work in
// the background) and checks that its volume is bound back to it.
func bound(env *testenv.Env, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var pvc *corev1.PersistentVolumeClaim
		for {
			var err error
			pvc, err = env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("claim %s: %w", name, err)
			}
			if pvc.Status.Phase == corev1.ClaimBound {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("claim %s is %s, never Bound", name, pvc.Status.Phase)
			case <-time.After(250 * time.Millisecond):
			}
		}
		pv, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("volume %s of claim %s: %w", pvc.Spec.VolumeName, name, err)
		}
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != name || pv.Spec.ClaimRef.UID != pvc.UID || pv.Status.Phase != corev1.VolumeBound {
			return fmt.Errorf("volume %s is %s with claimRef %v, want Bound to %s (uid %s)", pv.Name, pv.Status.Phase, pv.Spec.ClaimRef, name, pvc.UID)
		}
		return nil
	}
}

func deleteClaims(t *testing.T, env *testenv.Env, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			_ = env.Client.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
}

func pvcStore(name string, attrs ...string) string {
	return fmt.Sprintf("resource \"aiplatform_checkpoint_store\" \"s\" {\n  name      = %q\n  namespace = %q\n  %s\n}\n", name, ns, strings.Join(attrs, "\n  "))
}

// A pvc store: an RWX claim that binds, a backup CronJob, growth in place,
// shrinking refused, import, drift repaired, and the claim (bound to its
// volume) kept by destroy.
func TestAccCheckpointStorePVC(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_checkpoint_store.s"
	deleteClaims(t, env, "ckpt", "ckpt-backup")
	backup := `backup = { schedule = "0 */6 * * *", retention = 3 }`
	config := func(size string, extra ...string) string {
		return acctest.Provider(env) + pvcStore("ckpt", append([]string{`size = "` + size + `"`, `labels = { team = "llm" }`, backup}, extra...)...)
	}
	forced := func(size string) string {
		return acctest.Provider(env, "force_conflicts = true") + pvcStore("ckpt", `size = "`+size+`"`, `labels = { team = "llm" }`, backup)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:           config("1Gi"),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					claim("ckpt").Equal(env, "ReadWriteMany", "spec", "accessModes", "0"),
					claim("ckpt").Equal(env, "1Gi", "spec", "resources", "requests", "storage"),
					claim("ckpt").Equal(env, "llm", "metadata", "labels", "team"),
					claim("ckpt").Equal(env, testenv.StorageClass, "spec", "storageClassName"),
					bound(env, "ckpt"),
					claim("ckpt-backup").Equal(env, "3Gi", "spec", "resources", "requests", "storage"),
					cronJob("ckpt-backup").Equal(env, "0 */6 * * *", "spec", "schedule"),
					cronJob("ckpt-backup").Equal(env, "Forbid", "spec", "concurrencyPolicy"),
					cronJob("ckpt-backup").Equal(env, "ckpt", "spec", "jobTemplate", "spec", "template", "spec", "volumes", "0", "persistentVolumeClaim", "claimName"),
					cronJob("ckpt-backup").Equal(env, "3", "spec", "jobTemplate", "spec", "template", "spec", "containers", "0", "env", "0", "value"),
					resource.TestCheckResourceAttr(addr, "claim_name", "ckpt"),
					resource.TestCheckResourceAttr(addr, "mount_path", "/checkpoints"),
					resource.TestCheckResourceAttr(addr, "env.CHECKPOINT_DIR", "/checkpoints"),
					resource.TestCheckResourceAttr(addr, "storage_class", testenv.StorageClass),
					resource.TestCheckResourceAttr(addr, "backup.claim_name", "ckpt-backup"),
					resource.TestCheckResourceAttr(addr, "backup.image", "busybox:1.37.0"),
					resource.TestCheckResourceAttr(addr, "retain_on_destroy", "true"),
				),
			},
			{
				// Growing is an in-place expansion (the backup claim grows with it).
				Config:           config("2Gi"),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					claim("ckpt").Equal(env, "2Gi", "spec", "resources", "requests", "storage"),
					claim("ckpt-backup").Equal(env, "6Gi", "spec", "resources", "requests", "storage"),
				),
			},
			{
				Config:      config("1Gi"),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Claims cannot shrink", "size", "Kubernetes only expands claims"),
			},
			{
				Config:      config("2Gi", `access_mode = "ReadWriteOnce"`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Backup of a ReadWriteOnce claim"),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/ckpt"},
			{
				// Out-of-band edits: the schedule by another manager (a
				// conflict, so repaired with force_conflicts), a label removed.
				PreConfig: func() {
					cronJob("ckpt-backup").Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["spec"].(map[string]any)["schedule"] = "*/5 * * * *"
					})
					claim("ckpt").Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						delete(obj["metadata"].(map[string]any)["labels"].(map[string]any), "team")
					})
				},
				Config:           forced("2Gi"),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					cronJob("ckpt-backup").Equal(env, "0 */6 * * *", "spec", "schedule"),
					claim("ckpt").Equal(env, "llm", "metadata", "labels", "team"),
				),
			},
			{
				// The backup CronJob deleted out of band is planned back.
				PreConfig:        func() { cronJob("ckpt-backup").Delete(t, env) },
				Config:           forced("2Gi"),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)),
				Check:            cronJob("ckpt-backup").Equal(env, "0 */6 * * *", "spec", "schedule"),
			},
			{
				// Changing the access mode of a retained claim would clash
				// with the kept claim of the same name: refused at plan.
				Config:      acctest.Provider(env) + pvcStore("ckpt", `size = "2Gi"`, `access_mode = "ReadWriteOnce"`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Replacing a retained claim", "access_mode"),
			},
			{
				// Backup removed: the CronJob goes, the backup claim is kept.
				Config:           acctest.Provider(env) + pvcStore("ckpt", `size = "2Gi"`, `labels = { team = "llm" }`),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					cronJob("ckpt-backup").Gone(env),
					bound(env, "ckpt-backup"),
					resource.TestCheckNoResourceAttr(addr, "backup"),
				),
			},
		},
		// Destroy keeps the claim, still bound to its volume, and the backup
		// claim; the CronJob is gone.
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			claim("ckpt").Equal(env, "2Gi", "spec", "resources", "requests", "storage"),
			bound(env, "ckpt"),
			claim("ckpt-backup").Equal(env, "6Gi", "spec", "resources", "requests", "storage"),
			cronJob("ckpt-backup").Gone(env),
		),
	})
}

// retain_on_destroy = false deletes the claim; a ReadWriteOnce claim is
// allowed with a warning.
func TestAccCheckpointStoreDeleted(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_checkpoint_store.s"
	deleteClaims(t, env, "scratch")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: acctest.Provider(env) + pvcStore("scratch", `size = "512Mi"`, `access_mode = "ReadWriteOnce"`,
					`retain_on_destroy = false`, `mount_path = "/mnt/ckpt"`),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					claim("scratch").Equal(env, "ReadWriteOnce", "spec", "accessModes", "0"),
					bound(env, "scratch"),
					resource.TestCheckResourceAttr(addr, "env.CHECKPOINT_DIR", "/mnt/ckpt"),
					resource.TestCheckNoResourceAttr(addr, "backup"),
				),
			},
			{
				// Without retention a new access mode replaces the claim
				// (removing the line goes back to the ReadWriteMany default).
				Config:           acctest.Provider(env) + pvcStore("scratch", `size = "512Mi"`, `retain_on_destroy = false`, `mount_path = "/mnt/ckpt"`),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					claim("scratch").Equal(env, "ReadWriteMany", "spec", "accessModes", "0"),
					bound(env, "scratch"),
				),
			},
		},
		CheckDestroy: claim("scratch").Gone(env),
	})
}

// An object_store: a ConfigMap with the location and no secret values;
// import; drift repaired; destroy deletes the ConfigMap only.
func TestAccCheckpointStoreObjectStore(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_checkpoint_store.s"
	body := []string{`kind = "object_store"`, `uri = "s3://ckpt/llama-70b"`, `endpoint = "https://minio.example.com"`,
		`credentials_secret = { name = "s3-creds", keys = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] }`}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:           acctest.Provider(env) + pvcStore("bucket", body...),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					configMap("bucket").Equal(env, "s3://ckpt/llama-70b", "data", "CHECKPOINT_URI"),
					configMap("bucket").Equal(env, "https://minio.example.com", "data", "CHECKPOINT_ENDPOINT"),
					configMap("bucket").Equal(env, "s3-creds", "metadata", "annotations", "checkpoint-store.aiplatform.terraform.io/credentials-secret"),
					configMap("bucket").Check(env, func(obj map[string]any) error {
						if n := len(obj["data"].(map[string]any)); n != 2 {
							return fmt.Errorf("ConfigMap data has %d keys, want the 2 of env", n)
						}
						return nil
					}),
					claim("bucket").Gone(env),
					resource.TestCheckResourceAttr(addr, "config_map_name", "bucket"),
					resource.TestCheckResourceAttr(addr, "env.CHECKPOINT_URI", "s3://ckpt/llama-70b"),
					resource.TestCheckNoResourceAttr(addr, "claim_name"),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/bucket"},
			{
				PreConfig: func() {
					configMap("bucket").Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["data"].(map[string]any)["CHECKPOINT_URI"] = "s3://elsewhere/x"
					})
				},
				Config:           acctest.Provider(env, "force_conflicts = true") + pvcStore("bucket", body...),
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)),
				Check:            configMap("bucket").Equal(env, "s3://ckpt/llama-70b", "data", "CHECKPOINT_URI"),
			},
		},
		CheckDestroy: configMap("bucket").Gone(env),
	})
}

// Bad input is refused at plan with the attribute path, and nothing is created.
func TestAccCheckpointStoreBadInput(t *testing.T) {
	env := acctest.Env(t)
	cases := []struct {
		name  string
		attrs []string
		want  []string
	}{
		{"size-not-quantity", []string{`size = "lots"`}, []string{"size"}},
		{"size-missing", []string{`mount_path = "/ckpt"`}, []string{"Missing size"}},
		{"size-zero", []string{`size = "0"`}, []string{"Invalid size", "must be positive"}},
		{"both-kinds", []string{`size = "1Gi"`, `uri = "s3://b/p"`}, []string{"uri", "applies to kind \"object_store\" only"}},
		{"object-with-size", []string{`kind = "object_store"`, `uri = "s3://b/p"`, `size = "1Gi"`}, []string{"size", "applies to kind \"pvc\" only"}},
		{"uri-scheme", []string{`kind = "object_store"`, `uri = "ftp://b/p"`}, []string{"Invalid uri", "scheme \"ftp\""}},
		{"uri-no-bucket", []string{`kind = "object_store"`, `uri = "s3:///p"`}, []string{"Invalid uri", "names no bucket"}},
		{"uri-missing", []string{`kind = "object_store"`}, []string{"Missing uri"}},
		{"endpoint", []string{`kind = "object_store"`, `uri = "gs://b"`, `endpoint = "minio:9000"`}, []string{"Invalid endpoint"}},
		{"bad-cron", []string{`size = "1Gi"`, `backup = { schedule = "0 25 * * *" }`}, []string{"backup.schedule", "hour"}},
		{"cron-fields", []string{`size = "1Gi"`, `backup = { schedule = "daily" }`}, []string{"backup.schedule", "has 1 fields"}},
		{"retention", []string{`size = "1Gi"`, `backup = { schedule = "@daily", retention = 0 }`}, []string{"retention"}},
		{"rwo-backup", []string{`size = "1Gi"`, `access_mode = "ReadWriteOnce"`, `backup = { schedule = "@daily" }`}, []string{"backup", "ReadWriteOnce"}},
		{"mount-path", []string{`size = "1Gi"`, `mount_path = "ckpt"`}, []string{"mount_path", "not an absolute path"}},
		{"access-mode", []string{`size = "1Gi"`, `access_mode = "ReadOnlyMany"`}, []string{"access_mode"}},
		{"secret-key", []string{`kind = "object_store"`, `uri = "s3://b"`, `credentials_secret = { name = "c", keys = ["has-dash"] }`}, []string{"credentials_secret", "C identifier"}},
		{"reserved-label", []string{`size = "1Gi"`, `labels = { "app.kubernetes.io/component" = "x" }`}, []string{"Reserved label", "labels"}},
		{"backup-object", []string{`kind = "object_store"`, `uri = "s3://b"`, `backup = { schedule = "@daily" }`}, []string{"backup", "applies to kind \"pvc\" only"}},
	}
	var steps []resource.TestStep
	for _, c := range cases {
		steps = append(steps, resource.TestStep{
			Config:      acctest.Provider(env) + pvcStore("bad", c.attrs...),
			PlanOnly:    true,
			ExpectError: acctest.ErrorMatching(c.want...),
		})
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps:                    steps,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			claim("bad").Gone(env), configMap("bad").Gone(env), cronJob("bad-backup").Gone(env), claim("bad-backup").Gone(env)),
	})
}

// The documented example applies, plans empty and imports by its import.sh ID.
func TestAccCheckpointStoreExample(t *testing.T) {
	env := acctest.Env(t)
	ex := acctest.ResourceExample(t, "aiplatform_checkpoint_store")
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "training"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{"llama-70b-ckpt", "llama-70b-ckpt-backup"} {
			_ = env.Client.CoreV1().PersistentVolumeClaims("training").Delete(ctx, n, metav1.DeleteOptions{})
		}
		_ = env.Client.CoreV1().Namespaces().Delete(ctx, "training", metav1.DeleteOptions{})
	})
	kept := acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Namespace: "training", Name: "llama-70b-ckpt"}
	cfg := acctest.Provider(env) + ex.Config
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: cfg, ConfigPlanChecks: emptyAfter(), Check: kept.Equal(env, "ReadWriteMany", "spec", "accessModes", "0")},
			{Config: cfg, ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true},
		},
		CheckDestroy: kept.Equal(env, "2Ti", "spec", "resources", "requests", "storage"),
	})
}

// Destroy is never silent about the checkpoints it keeps: the destroy plan
// warns, and the destroy names the claims it leaves (which are still there).
func TestAccCheckpointStoreDestroySaysWhatItKeeps(t *testing.T) {
	env := acctest.Env(t)
	deleteClaims(t, env, "said", "said-backup")
	src := t.TempDir()
	tf := acctest.RequiredProviders + `
variable "kubeconfig" { type = string }
provider "aiplatform" { config_path = var.kubeconfig }
` + pvcStore("said", `size = "1Gi"`, `backup = { schedule = "@daily", retention = 2 }`)
	if err := os.WriteFile(filepath.Join(src, "main.tf"), []byte(tf), 0o644); err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, src)
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	out, err := w.Run("plan", "-destroy")
	if err != nil {
		t.Fatal(err)
	}
	if re := acctest.ErrorMatching("Destroy keeps the checkpoint claim", "PersistentVolumeClaim default/said", "backup claim default/said-backup"); !re.MatchString(out) {
		t.Errorf("the destroy plan does not warn about the kept claims:\n%s", out)
	}
	out, err = w.Run("destroy", "-auto-approve")
	if err != nil {
		t.Fatal(err)
	}
	if re := acctest.ErrorMatching("Checkpoint claim kept", "PersistentVolumeClaim default/said", "kubectl delete pvc -n default said"); !re.MatchString(out) {
		t.Errorf("destroy does not say which claim it keeps:\n%s", out)
	}
	for _, check := range []resource.TestCheckFunc{bound(env, "said"), bound(env, "said-backup"), cronJob("said-backup").Gone(env)} {
		if err := check(nil); err != nil {
			t.Error(err)
		}
	}
}
