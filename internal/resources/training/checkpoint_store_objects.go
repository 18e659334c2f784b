package training

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// The objects of a store, rendered from a resolved spec, and the model read
// back from them.

const (
	prefix = "checkpoint-store.aiplatform.terraform.io/"
	// LabelStore carries the store's name on each of its objects.
	LabelStore = prefix + "name"
	// Recorded on the claim or ConfigMap so that import restores them.
	AnnotationRetain      = prefix + "retain-on-destroy"
	AnnotationMountPath   = prefix + "mount-path"
	AnnotationSecretName  = prefix + "credentials-secret"
	AnnotationSecretKeys  = prefix + "credentials-keys"
	AnnotationBackupClaim = prefix + "backup-claim"

	// BackupRoot and BackupSource are where the backup pod mounts the backup
	// claim and (read-only) the store's claim.
	BackupRoot   = "/backup"
	BackupSource = "/checkpoints"
	// EnvRetention tells the backup script how many copies to keep.
	EnvRetention = "BACKUP_RETENTION"

	containerBackup = "backup"
)

var (
	configMapKind = kube.Kind{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	cronJobKind   = kube.Kind{Group: "batch", Version: "v1", Resource: "cronjobs", Kind: "CronJob", Namespaced: true}
	claimKind     = kube.PersistentVolumeClaimKind
)

// backupScript copies the claim into a new timestamped directory (complete
// only once renamed), then removes all but the newest $BACKUP_RETENTION
// copies; nothing else in the backup claim (lost+found) is touched.
const backupScript = `set -eu
stamp=$(date -u +%Y%m%dT%H%M%SZ)
rm -rf "` + BackupRoot + `"/.partial-*
mkdir -p "` + BackupRoot + `/.partial-$stamp"
cp -a "` + BackupSource + `/." "` + BackupRoot + `/.partial-$stamp/"
mv "` + BackupRoot + `/.partial-$stamp" "` + BackupRoot + `/$stamp"
ls -1 "` + BackupRoot + `" | grep -E '^[0-9]{8}T[0-9]{6}Z$' | sort -r | tail -n +$((BACKUP_RETENTION + 1)) | while read -r old; do
  echo "checkpoint-backup: removing $old"
  rm -rf "` + BackupRoot + `/$old"
done
echo "checkpoint-backup: $stamp done"
`

// storeSpec is a store's configuration with every default resolved.
type storeSpec struct {
	Namespace, Name, Kind string
	Size, StorageClass    string
	AccessMode, MountPath string
	Retain                bool
	Labels                map[string]string
	URI, Endpoint         string
	SecretName            string
	SecretKeys            []string
	Backup                *backupSpec
}

type backupSpec struct {
	Schedule    string
	Retention   int64
	Image, Size string
	ClaimName   string
}

func (s *storeSpec) ref() kube.Ref { return kube.Ref{Namespace: s.Namespace, Name: s.Name} }

func backupName(name string) string { return name + "-backup" }

// resolveStore reads a planned model whose values are known.
func resolveStore(m *storeModel) *storeSpec {
	s := &storeSpec{
		Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString(), Kind: kindOf(m),
		Size: m.Size.ValueString(), StorageClass: m.StorageClass.ValueString(),
		AccessMode: m.AccessMode.ValueString(), MountPath: m.MountPath.ValueString(),
		Retain: m.RetainOnDestroy.ValueBool(), Labels: object.Strings(m.Labels),
		URI: m.URI.ValueString(), Endpoint: m.Endpoint.ValueString(),
	}
	if m.CredentialsSecret != nil {
		s.SecretName = m.CredentialsSecret.Name.ValueString()
		s.SecretKeys = object.ListStrings(m.CredentialsSecret.Keys)
	}
	if b := m.Backup; b != nil {
		s.Backup = &backupSpec{Schedule: b.Schedule.ValueString(), Retention: b.Retention.ValueInt64(),
			Image: b.Image.ValueString(), Size: b.Size.ValueString(), ClaimName: backupName(s.Name)}
	}
	return s
}

// env is what runtimes pass to their containers.
func (s *storeSpec) env() map[string]string {
	if s.Kind == KindObjectStore {
		env := map[string]string{EnvURI: s.URI}
		if s.Endpoint != "" {
			env[EnvEndpoint] = s.Endpoint
		}
		return env
	}
	return map[string]string{EnvDir: s.MountPath}
}

func (s *storeSpec) labels(component string) map[string]any {
	out := map[string]any{}
	for k, v := range s.Labels {
		out[k] = v
	}
	out["app.kubernetes.io/managed-by"] = kube.FieldManager
	out["app.kubernetes.io/component"] = component
	out[LabelStore] = s.Name
	return out
}

// ownLabels are the labels every object of a store carries, not the user's.
func ownLabel(k string) bool {
	return k == LabelStore || k == "app.kubernetes.io/managed-by" || k == "app.kubernetes.io/component"
}

func claimFields(labels map[string]any, annotations map[string]any, size, class, mode string) map[string]any {
	spec := map[string]any{
		"accessModes": []any{mode},
		"resources":   map[string]any{"requests": map[string]any{"storage": size}},
	}
	object.Put(spec, "storageClassName", class)
	meta := map[string]any{"labels": labels}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	return map[string]any{"metadata": meta, "spec": spec}
}

// claim is the store's claim.
func (s *storeSpec) claim() map[string]any {
	ann := map[string]any{AnnotationRetain: strconv.FormatBool(s.Retain), AnnotationMountPath: s.MountPath}
	return claimFields(s.labels("checkpoint-store"), ann, s.Size, s.StorageClass, s.AccessMode)
}

// backupClaim is written once by one pod at a time: ReadWriteOnce, in the
// class the store's claim got.
func (s *storeSpec) backupClaim(class string) map[string]any {
	ann := map[string]any{AnnotationRetain: strconv.FormatBool(s.Retain)}
	return claimFields(s.labels("checkpoint-backup"), ann, s.Backup.Size, class, AccessRWO)
}

// configMap publishes an object-store location: its data is env (runtimes
// use envFrom); the Secret's name and keys are annotations, never values.
func (s *storeSpec) configMap() map[string]any {
	data := map[string]any{}
	for k, v := range s.env() {
		data[k] = v
	}
	ann := map[string]any{AnnotationRetain: strconv.FormatBool(s.Retain)}
	if s.SecretName != "" {
		ann[AnnotationSecretName] = s.SecretName
		ann[AnnotationSecretKeys] = strings.Join(s.SecretKeys, ",")
	}
	return map[string]any{"metadata": map[string]any{"labels": s.labels("checkpoint-store"), "annotations": ann}, "data": data}
}

// cronJob copies the claim into the backup claim on schedule; runs never
// overlap, and a failed run is retried twice, then waits for the next slot.
func (s *storeSpec) cronJob() map[string]any {
	b := s.Backup
	labels := s.labels("checkpoint-backup")
	pod := map[string]any{
		"restartPolicy": "Never",
		"containers": []any{map[string]any{
			"name":    containerBackup,
			"image":   b.Image,
			"command": []any{"sh", "-c", backupScript},
			"env":     []any{map[string]any{"name": EnvRetention, "value": strconv.FormatInt(b.Retention, 10)}},
			"volumeMounts": []any{
				map[string]any{"name": "checkpoints", "mountPath": BackupSource, "readOnly": true},
				map[string]any{"name": "backup", "mountPath": BackupRoot},
			},
		}},
		"volumes": []any{
			map[string]any{"name": "checkpoints", "persistentVolumeClaim": map[string]any{"claimName": s.Name, "readOnly": true}},
			map[string]any{"name": "backup", "persistentVolumeClaim": map[string]any{"claimName": b.ClaimName}},
		},
	}
	return map[string]any{
		"metadata": map[string]any{"labels": labels, "annotations": map[string]any{AnnotationBackupClaim: b.ClaimName}},
		"spec": map[string]any{
			"schedule":                   b.Schedule,
			"concurrencyPolicy":          "Forbid",
			"successfulJobsHistoryLimit": int64(1),
			"failedJobsHistoryLimit":     int64(3),
			"jobTemplate": map[string]any{"spec": map[string]any{
				"backoffLimit": int64(2),
				"template":     map[string]any{"metadata": map[string]any{"labels": labels}, "spec": pod},
			}},
		},
	}
}

// readLabels reads the user's labels: on import all but the store's own;
// otherwise only the keys the configuration manages (others belong to
// other tools and are not this store's drift).
func readLabels(live map[string]any, prior types.Map, importing bool) types.Map {
	all := object.Fields(live, "metadata", "labels")
	managed := object.Strings(prior)
	keep := map[string]any{}
	for k, v := range all {
		if ownLabel(k) {
			continue
		}
		if _, ok := managed[k]; importing || ok {
			keep[k] = v
		}
	}
	return object.StringMap(keep, prior)
}

func annotation(live map[string]any, key string) (string, bool) {
	v, ok := object.Fields(live, "metadata", "annotations")[key].(string)
	return v, ok
}

func readRetain(live map[string]any, prior types.Bool) types.Bool {
	if v, ok := annotation(live, AnnotationRetain); ok {
		if b, err := strconv.ParseBool(v); err == nil {
			return types.BoolValue(b)
		}
	}
	if object.Known(prior) {
		return prior
	}
	return types.BoolValue(true)
}

// readClaim sets a pvc store's attributes from its live claim.
func readClaim(live map[string]any, m *storeModel, importing bool) {
	m.Kind = types.StringValue(KindPVC)
	m.Size = object.Quantity(object.Field(live, "spec", "resources", "requests", "storage"), m.Size)
	m.StorageClass = object.String(object.Field(live, "spec", "storageClassName"), m.StorageClass)
	modes := object.StringList(object.Field(live, "spec", "accessModes"), nil)
	parts := make([]string, len(modes))
	for i, a := range modes {
		parts[i] = a.ValueString()
	}
	m.AccessMode = types.StringNull()
	if len(parts) > 0 {
		m.AccessMode = types.StringValue(strings.Join(parts, ","))
	}
	m.RetainOnDestroy = readRetain(live, m.RetainOnDestroy)
	if p, ok := annotation(live, AnnotationMountPath); ok && p != "" {
		m.MountPath = types.StringValue(p)
	} else if !object.Known(m.MountPath) {
		m.MountPath = types.StringValue(DefaultMountPath)
	}
	m.Labels = readLabels(live, m.Labels, importing)
	m.URI, m.Endpoint, m.CredentialsSecret = types.StringNull(), types.StringNull(), nil
	m.ClaimName = types.StringValue(m.Name.ValueString())
	m.ConfigMapName = types.StringNull()
	m.Env = envValue(map[string]string{EnvDir: m.MountPath.ValueString()})
}

// readBackup sets backup from the live CronJob and backup claim (either may
// be nil: deleted out of band).
func readBackup(cron, claim map[string]any, m *storeModel) {
	if cron == nil {
		m.Backup = nil
		return
	}
	prior := m.Backup
	if prior == nil {
		prior = &backupModel{Size: types.StringNull()}
	}
	b := &backupModel{
		Schedule:  object.String(object.Field(cron, "spec", "schedule"), prior.Schedule),
		Retention: types.Int64Null(), Image: types.StringNull(), Size: types.StringNull(),
		ClaimName: types.StringValue(backupName(m.Name.ValueString())),
	}
	tmpl := object.Fields(cron, "spec", "jobTemplate", "spec", "template", "spec")
	for _, c := range object.Items(tmpl, "containers") {
		if c["name"] != containerBackup {
			continue
		}
		b.Image = object.String(c["image"], prior.Image)
		for _, e := range object.Items(c, "env") {
			if e["name"] == EnvRetention {
				if n, err := strconv.ParseInt(fmt.Sprint(e["value"]), 10, 64); err == nil {
					b.Retention = types.Int64Value(n)
				}
			}
		}
	}
	if claim != nil {
		b.Size = object.Quantity(object.Field(claim, "spec", "resources", "requests", "storage"), prior.Size)
	}
	m.Backup = b
}

// readConfigMap sets an object_store's attributes from its live ConfigMap.
func readConfigMap(live map[string]any, m *storeModel, importing bool) {
	m.Kind = types.StringValue(KindObjectStore)
	data := object.Fields(live, "data")
	m.URI = object.String(data[EnvURI], m.URI)
	m.Endpoint = object.String(data[EnvEndpoint], m.Endpoint)
	m.CredentialsSecret = nil
	if name, ok := annotation(live, AnnotationSecretName); ok && name != "" {
		keys, _ := annotation(live, AnnotationSecretKeys)
		var list []string
		if keys != "" {
			list = strings.Split(keys, ",")
		}
		m.CredentialsSecret = &credentialsModel{Name: types.StringValue(name), Keys: object.ListValue(list)}
	}
	m.RetainOnDestroy = readRetain(live, m.RetainOnDestroy)
	m.Labels = readLabels(live, m.Labels, importing)
	m.Size, m.StorageClass, m.AccessMode, m.MountPath = types.StringNull(), types.StringNull(), types.StringNull(), types.StringNull()
	m.Backup = nil
	m.ClaimName = types.StringNull()
	m.ConfigMapName = types.StringValue(m.Name.ValueString())
	env := map[string]string{}
	for _, k := range []string{EnvURI, EnvEndpoint} {
		if v, ok := data[k].(string); ok {
			env[k] = v
		}
	}
	m.Env = envValue(env)
}

func envValue(env map[string]string) types.Map {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	elems := make(map[string]attr.Value, len(env))
	for _, k := range keys {
		elems[k] = types.StringValue(env[k])
	}
	return types.MapValueMust(types.StringType, elems)
}
