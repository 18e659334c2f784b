package training

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestCheckCron(t *testing.T) {
	for _, ok := range []string{"0 */6 * * *", "@daily", "@HOURLY", "30 2 * * mon-fri", "0 0 1,15 jan-jun *", "*/15 * * * 7", "0 0 ? * sun"} {
		if err := CheckCron(ok); err != nil {
			t.Errorf("CheckCron(%q) = %v, want nil", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"":                 "empty",
		"daily":            "has 1 fields",
		"0 25 * * *":       "hour field",
		"60 * * * *":       "minute field",
		"* * 0 * *":        "day of month",
		"* * * 13 *":       "month",
		"* * * * 8":        "day of week",
		"*/0 * * * *":      "step",
		"5-1 * * * *":      "backwards",
		"@fortnightly":     "not one of",
		"TZ=UTC 0 * * * *": "time zone",
		"0 0 * * * *":      "has 6 fields",
		"a * * * *":        "not a number",
	} {
		err := CheckCron(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckCron(%q) = %v, want an error containing %q", bad, err, want)
		}
	}
}

func TestCheckURI(t *testing.T) {
	for _, ok := range []string{"s3://bucket/prefix", "gs://b", "az://container/x/y", "hdfs://nn:8020/ckpt"} {
		if err := CheckURI(ok); err != nil {
			t.Errorf("CheckURI(%q) = %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"ftp://b/p":        "scheme",
		"bucket/prefix":    "scheme",
		"s3:///prefix":     "no bucket",
		"s3://b/p?x=1":     "no query",
		"s3://key:sec@b/p": "no query, fragment or user",
	} {
		if err := CheckURI(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURI(%q) = %v, want %q", bad, err, want)
		}
	}
}

func pvcModel(size string) *storeModel {
	m := &storeModel{Kind: types.StringValue(KindPVC), Size: types.StringValue(size),
		StorageClass: types.StringNull(), AccessMode: types.StringNull(), MountPath: types.StringNull(),
		RetainOnDestroy: types.BoolValue(true), Labels: types.MapNull(types.StringType),
		URI: types.StringNull(), Endpoint: types.StringNull()}
	m.Name, m.Namespace = types.StringValue("ckpt"), types.StringValue("ml")
	return m
}

func TestPlanStoreDefaultsAndShrink(t *testing.T) {
	plan, config := pvcModel("10Gi"), pvcModel("10Gi")
	plan.Backup = &backupModel{Schedule: types.StringValue("@daily"), Retention: types.Int64Unknown(), Image: types.StringUnknown(), Size: types.StringUnknown()}
	config.Backup = &backupModel{Schedule: types.StringValue("@daily"), Retention: types.Int64Null(), Image: types.StringNull(), Size: types.StringNull()}
	if d := planStore(plan, config, nil); d.HasError() {
		t.Fatal(d)
	}
	if plan.AccessMode.ValueString() != AccessRWX || plan.MountPath.ValueString() != DefaultMountPath || !plan.StorageClass.IsUnknown() {
		t.Errorf("defaults: access %s mount %s class %s", plan.AccessMode, plan.MountPath, plan.StorageClass)
	}
	if plan.Backup.Size.ValueString() != "70Gi" || plan.Backup.Retention.ValueInt64() != DefaultRetention || plan.Backup.ClaimName.ValueString() != "ckpt-backup" {
		t.Errorf("backup defaults: %+v", plan.Backup)
	}
	if got := plan.Env.Elements()[EnvDir].(types.String).ValueString(); got != DefaultMountPath {
		t.Errorf("env %s = %q", EnvDir, got)
	}
	prior := pvcModel("20Gi")
	d := planStore(pvcModel("10Gi"), pvcModel("10Gi"), prior)
	if !d.HasError() || !strings.Contains(d.Errors()[0].Detail(), "only expands") {
		t.Errorf("shrink: %v", d)
	}
	if d := planStore(pvcModel("30Gi"), pvcModel("30Gi"), prior); d.HasError() {
		t.Errorf("grow: %v", d)
	}
}

func TestValidate(t *testing.T) {
	m := pvcModel("1Gi")
	m.URI = types.StringValue("s3://b")
	if d := validateStore(m); !d.HasError() {
		t.Error("pvc with uri accepted")
	}
	o := pvcModel("1Gi")
	o.Kind, o.Size, o.URI = types.StringValue(KindObjectStore), types.StringNull(), types.StringValue("gs://b/p")
	if d := validateStore(o); d.HasError() {
		t.Error(d)
	}
	u := pvcModel("1Gi")
	u.Size = types.StringUnknown()
	if d := validateStore(u); d.HasError() {
		t.Errorf("unknown size: %v", d)
	}
}

func TestRenderNoSecretValues(t *testing.T) {
	s := &storeSpec{Namespace: "ml", Name: "b", Kind: KindObjectStore, URI: "s3://b/p", SecretName: "creds", SecretKeys: []string{"A", "B"}}
	cm := s.configMap()
	data := cm["data"].(map[string]any)
	if len(data) != 1 || data[EnvURI] != "s3://b/p" {
		t.Errorf("data = %v", data)
	}
	ann := cm["metadata"].(map[string]any)["annotations"].(map[string]any)
	if ann[AnnotationSecretName] != "creds" || ann[AnnotationSecretKeys] != "A,B" {
		t.Errorf("annotations = %v", ann)
	}
}
