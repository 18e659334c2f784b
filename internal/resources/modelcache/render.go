package modelcache

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// The objects of a cache, rendered from a resolved spec (no Terraform types).
const (
	// WarmRoot is where warm-up pods mount the cache's volume.
	WarmRoot = "/model-cache"
	// SecretDir is where warm-up pods see the files of secret_ref.
	SecretDir = "/var/run/secrets/model-cache"
	// HelperImage runs the finalize step: prune older revisions, measure,
	// mark complete.
	HelperImage = "busybox:1.37.0"
	// IdleImage keeps a node_local DaemonSet's pods Running once warm.
	IdleImage = "registry.k8s.io/pause:3.10"
	// JobTTL is how long a finished warm-up Job is kept for inspection
	// (the warmed state lives on the claim, not on the Job).
	JobTTL = int32(3600)

	containerDownload = "download"
	containerFinalize = "finalize"
	containerIdle     = "idle"
	volumeCache       = "model-cache"
	volumeSecret      = "model-cache-secret"
)

// finalizeScript runs after the download: it keeps the new revision and the
// one before it (replicas may still read it), removes older ones, and reports
// the size in the termination message, where the provider reads it even when
// pod logs are not available.
const finalizeScript = `set -eu
if [ ! -d "$MODEL_CACHE_DIR" ] || [ -z "$(ls -A "$MODEL_CACHE_DIR")" ]; then
  echo "model-cache: the downloader left $MODEL_CACHE_DIR empty" | tee /dev/termination-log >&2
  exit 1
fi
for d in "$MODEL_CACHE_ROOT"/*; do
  [ -d "$d" ] || continue
  b=${d##*/}
  if [ "$b" != "$MODEL_CACHE_SUBPATH" ] && [ "$b" != "${MODEL_CACHE_KEEP:-}" ]; then
    echo "model-cache: removing older revision $b"
    rm -rf "$d"
  fi
done
kib=$(du -sk "$MODEL_CACHE_DIR" | cut -f1)
files=$(find "$MODEL_CACHE_DIR" -type f | wc -l)
date -u +%Y-%m-%dT%H:%M:%SZ > "$MODEL_CACHE_DIR/.model-cache-complete"
echo "model-cache: done bytes=$((kib * 1024)) files=$files" | tee /dev/termination-log
`

// spec is a cache's configuration with every default resolved.
type spec struct {
	Namespace, Name   string
	Mode              string
	Source            Source
	Revision          string // as configured ("" when unset)
	EffectiveRevision string
	SubPath           string
	SecretRef         string
	Downloader        Downloader
	MountPath         string
	HostPath          string
	NodeSelector      map[string]string
	PodAnnotations    map[string]string
	BackoffLimit      int64
	Timeout           time.Duration
	TimeoutText       string
	Size              string
	StorageClass      string
	AccessModes       []string
	RetainOnDestroy   bool
}

func (s *spec) ref() kube.Ref { return kube.Ref{Namespace: s.Namespace, Name: s.Name} }

// selector selects every object and pod of the cache.
func (s *spec) selector() string { return LabelName + "=" + s.Name }

func (s *spec) labels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "model-cache",
		"app.kubernetes.io/instance":   s.Name,
		"app.kubernetes.io/managed-by": kube.FieldManager,
		LabelName:                      s.Name,
	}
}

// key identifies what a warm-up puts in place: a change re-warms.
func (s *spec) key() string {
	if s.Mode == ModeNodeLocal {
		return s.SubPath + "@" + s.HostPath
	}
	return s.SubPath
}

// jobName is unique per revision (shown by kubectl get jobs) and fits the
// 63 characters of the job-name label.
func (s *spec) jobName() string {
	sum := sha256.Sum256([]byte(s.SubPath))
	name := s.Name
	if len(name) > 46 {
		name = name[:46]
	}
	return name + "-warm-" + hex.EncodeToString(sum[:])[:10]
}

// record is what the owning object records of s; warmed is nil until a
// warm-up succeeded.
func (s *spec) record(w *warmed) *record {
	r := &record{
		Mode: s.Mode, URI: s.Source.URI, SecretRef: s.SecretRef,
		Downloader:      downloaderRecord{Image: s.Downloader.Image, Command: s.Downloader.Command, Args: s.Downloader.Args},
		MountPath:       s.MountPath,
		HostPath:        s.HostPath,
		NodeSelector:    s.NodeSelector,
		PodAnnotations:  s.PodAnnotations,
		BackoffLimit:    s.BackoffLimit,
		Timeout:         s.TimeoutText,
		RetainOnDestroy: s.RetainOnDestroy,
		Warmed:          w,
	}
	if s.Revision != "" {
		rev := s.Revision
		r.Revision = &rev
	}
	return r
}

// env of the warm-up containers: only variables, sorted; the default scripts
// read nothing else.
func (s *spec) env(keep string) []*corev1ac.EnvVarApplyConfiguration {
	vars := map[string]string{
		"MODEL_URI":           s.Source.URI,
		"MODEL_REVISION":      s.EffectiveRevision,
		"MODEL_CACHE_ROOT":    WarmRoot,
		"MODEL_CACHE_DIR":     WarmRoot + "/" + s.SubPath,
		"MODEL_CACHE_SUBPATH": s.SubPath,
	}
	if keep != "" && keep != s.SubPath {
		vars["MODEL_CACHE_KEEP"] = keep
	}
	for k, v := range s.Source.downloadEnv(s.Revision) {
		vars[k] = v
	}
	out := make([]*corev1ac.EnvVarApplyConfiguration, 0, len(vars))
	for _, k := range sortedKeys(vars) {
		out = append(out, corev1ac.EnvVar().WithName(k).WithValue(vars[k]))
	}
	return out
}

func (s *spec) downloadContainer(keep string) *corev1ac.ContainerApplyConfiguration {
	c := corev1ac.Container().
		WithName(containerDownload).
		WithImage(s.Downloader.Image).
		WithEnv(s.env(keep)...).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(volumeCache).WithMountPath(WarmRoot)).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError)
	if len(s.Downloader.Command) > 0 {
		c.WithCommand(s.Downloader.Command...)
	}
	if len(s.Downloader.Args) > 0 {
		c.WithArgs(s.Downloader.Args...)
	}
	if s.SecretRef != "" {
		c.WithEnvFrom(corev1ac.EnvFromSource().WithSecretRef(corev1ac.SecretEnvSource().WithName(s.SecretRef)))
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(volumeSecret).WithMountPath(SecretDir).WithReadOnly(true))
	}
	return c
}

func (s *spec) finalizeContainer(keep string) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(containerFinalize).
		WithImage(HelperImage).
		WithCommand("sh", "-c", finalizeScript).
		WithEnv(s.env(keep)...).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(volumeCache).WithMountPath(WarmRoot)).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError)
}

func (s *spec) podTemplate(cache *corev1ac.VolumeApplyConfiguration) *corev1ac.PodTemplateSpecApplyConfiguration {
	annotations := map[string]string{AnnotationSubPath: s.SubPath}
	for k, v := range s.PodAnnotations {
		annotations[k] = v
	}
	pod := corev1ac.PodSpec().WithVolumes(cache)
	if s.SecretRef != "" {
		pod.WithVolumes(corev1ac.Volume().WithName(volumeSecret).
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(s.SecretRef)))
	}
	return corev1ac.PodTemplateSpec().
		WithLabels(s.labels()).
		WithAnnotations(annotations).
		WithSpec(pod)
}

// claim is the PersistentVolumeClaim of mode pvc, annotated with rec.
func (s *spec) claim(rec *record) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	modes := make([]corev1.PersistentVolumeAccessMode, len(s.AccessModes))
	for i, m := range s.AccessModes {
		modes[i] = corev1.PersistentVolumeAccessMode(m)
	}
	pvcSpec := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(modes...).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(s.Size)}))
	if s.StorageClass != "" {
		pvcSpec.WithStorageClassName(s.StorageClass)
	}
	return corev1ac.PersistentVolumeClaim(s.Name, s.Namespace).
		WithLabels(s.labels()).
		WithAnnotations(rec.annotations()).
		WithSpec(pvcSpec)
}

// job is the warm-up Job of mode pvc: the downloader as an init container,
// then finalize. It fails by itself after the timeout (activeDeadlineSeconds)
// or backoff_limit retries, so its condition carries the reason.
func (s *spec) job(keep string) *batchv1ac.JobApplyConfiguration {
	cache := corev1ac.Volume().WithName(volumeCache).
		WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(s.Name))
	tmpl := s.podTemplate(cache)
	tmpl.Spec.
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithInitContainers(s.downloadContainer(keep)).
		WithContainers(s.finalizeContainer(keep))
	return batchv1ac.Job(s.jobName(), s.Namespace).
		WithLabels(s.labels()).
		WithAnnotations(map[string]string{AnnotationSubPath: s.SubPath, AnnotationWarmedRevision: s.EffectiveRevision}).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(int32(s.BackoffLimit)).
			WithActiveDeadlineSeconds(int64(s.Timeout / time.Second)).
			WithTTLSecondsAfterFinished(JobTTL).
			WithTemplate(tmpl))
}

// daemonSet is the node_local DaemonSet: on every node of the selector the
// downloader fills the hostPath directory, finalize checks it, then a pause
// container idles so the pod stays Ready. It tolerates every taint (GPU
// pools are usually tainted); node_selector alone says where it runs.
func (s *spec) daemonSet(keep string, rec *record) *appsv1ac.DaemonSetApplyConfiguration {
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	cache := corev1ac.Volume().WithName(volumeCache).
		WithHostPath(corev1ac.HostPathVolumeSource().WithPath(s.HostPath).WithType(dirOrCreate))
	tmpl := s.podTemplate(cache)
	tmpl.Spec.
		WithNodeSelector(s.NodeSelector).
		WithTolerations(corev1ac.Toleration().WithOperator(corev1.TolerationOpExists)).
		WithInitContainers(s.downloadContainer(keep), s.finalizeContainer(keep)).
		WithContainers(corev1ac.Container().WithName(containerIdle).WithImage(IdleImage))
	// Every node re-warms at once: a warming pod serves nothing, so there
	// is nothing to keep available, and one node at a time would multiply
	// the warm-up time by the pool's size.
	all := intstr.FromString("100%")
	return appsv1ac.DaemonSet(s.Name, s.Namespace).
		WithLabels(s.labels()).
		WithAnnotations(rec.annotations()).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{LabelName: s.Name})).
			WithUpdateStrategy(appsv1ac.DaemonSetUpdateStrategy().
				WithType("RollingUpdate").
				WithRollingUpdate(appsv1ac.RollingUpdateDaemonSet().WithMaxUnavailable(all))).
			WithTemplate(tmpl))
}
