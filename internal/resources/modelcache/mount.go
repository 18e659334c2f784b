package modelcache

import (
	"errors"
	"fmt"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
)

// For the serving resources (LeaderWorkerSet groups, Ray clusters): how a
// pod mounts a warmed cache, read-only, and how long its startup probe must
// let it read the weights. Nothing here does I/O.

// Cache is a warmed model cache as its consumers see it: the computed
// attributes of aiplatform_model_cache (mode, claim_name, host_path,
// sub_path, mount_path, size_bytes).
type Cache struct {
	Mode      string // ModePVC or ModeNodeLocal
	ClaimName string // mode pvc
	HostPath  string // mode node_local: the cache's directory on each node
	SubPath   string // the warmed revision's directory
	MountPath string // where the weights appear in the consumer's containers
	SizeBytes int64  // 0 when the warm-up did not report it
}

// DefaultVolumeName is the name of the cache's volume in a consumer pod.
const DefaultVolumeName = "model-cache"

// Assumed read throughput of one replica loading its weights, by mode, when
// the caller knows no better: a shared network file system serving many
// replicas at once (PVC), or one node's local NVMe (node_local).
const (
	DefaultPVCReadBytesPerSecond       = 200 << 20 // 200 MiB/s
	DefaultNodeLocalReadBytesPerSecond = 1 << 30   // 1 GiB/s
)

func (c Cache) check() error {
	switch {
	case c.SubPath == "" || c.MountPath == "":
		return errors.New("the model cache has no warmed revision yet (sub_path or mount_path is empty)")
	case c.Mode == ModePVC && c.ClaimName == "":
		return errors.New("a pvc model cache without claim_name")
	case c.Mode == ModeNodeLocal && c.HostPath == "":
		return errors.New("a node_local model cache without host_path")
	case c.Mode != ModePVC && c.Mode != ModeNodeLocal:
		return fmt.Errorf("unknown model cache mode %q", c.Mode)
	}
	return nil
}

// Mount returns the pod volume and the container's volumeMount that expose
// the warmed revision read-only at MountPath. A claim is mounted with the
// revision as subPath; a node_local cache as the revision's hostPath
// directory, which must exist (type Directory): a pod on a node whose copy
// is missing waits instead of starting without weights.
func (c Cache) Mount(volumeName string) (corev1.Volume, corev1.VolumeMount, error) {
	if err := c.check(); err != nil {
		return corev1.Volume{}, corev1.VolumeMount{}, err
	}
	if volumeName == "" {
		volumeName = DefaultVolumeName
	}
	mount := corev1.VolumeMount{Name: volumeName, MountPath: c.MountPath, ReadOnly: true}
	vol := corev1.Volume{Name: volumeName}
	switch c.Mode {
	case ModePVC:
		vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.ClaimName, ReadOnly: true}
		mount.SubPath = c.SubPath
	case ModeNodeLocal:
		dir := corev1.HostPathDirectory
		vol.HostPath = &corev1.HostPathVolumeSource{Path: path.Join(c.HostPath, c.SubPath), Type: &dir}
	}
	return vol, mount, nil
}

// ProbeOptions tune StartupProbe; zero values take the defaults.
type ProbeOptions struct {
	// SizeBytes overrides the cache's size_bytes (e.g. parameters × bytes
	// per parameter when the downloader did not report a size).
	SizeBytes int64
	// BytesPerSecond is the assumed read throughput; default by mode.
	BytesPerSecond float64
	// Safety, PeriodSeconds and Overhead: see capacity.Startup.
	Safety        float64
	PeriodSeconds int32
	Overhead      time.Duration
}

// StartupProbe returns a startup probe with the given handler (the model
// server's health endpoint) whose failureThreshold × periodSeconds covers
// reading the weights: ⌈(size ÷ throughput + overhead) × safety ÷ period⌉
// (capacity.StartupProbeBudget). Pair it with no livenessProbe that could act
// before it succeeds; Kubernetes holds liveness and readiness probes until
// the startup probe has passed, so a liveness probe can stay short.
func (c Cache) StartupProbe(handler corev1.ProbeHandler, o ProbeOptions) (*corev1.Probe, capacity.StartupBudget, error) {
	size := o.SizeBytes
	if size == 0 {
		size = c.SizeBytes
	}
	if size <= 0 {
		return nil, capacity.StartupBudget{}, errors.New("the model's size is unknown: the warm-up did not report size_bytes; give the size (parameters × bytes per parameter)")
	}
	tp := o.BytesPerSecond
	if tp == 0 {
		tp = DefaultPVCReadBytesPerSecond
		if c.Mode == ModeNodeLocal {
			tp = DefaultNodeLocalReadBytesPerSecond
		}
	}
	b, err := capacity.StartupProbeBudget(capacity.Startup{
		ModelBytes: size, BytesPerSecond: tp, Safety: o.Safety, PeriodSeconds: o.PeriodSeconds, Overhead: o.Overhead,
	})
	if err != nil {
		return nil, b, err
	}
	return &corev1.Probe{
		ProbeHandler:     handler,
		PeriodSeconds:    b.PeriodSeconds,
		FailureThreshold: b.FailureThreshold,
		TimeoutSeconds:   1,
		SuccessThreshold: 1,
	}, b, nil
}
