package modelcache

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestMount(t *testing.T) {
	pvc := Cache{Mode: ModePVC, ClaimName: "llama", SubPath: "main-0123abcd", MountPath: "/models/llama"}
	vol, mount, err := pvc.Mount("")
	if err != nil {
		t.Fatal(err)
	}
	if vol.Name != DefaultVolumeName || vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != "llama" || !vol.PersistentVolumeClaim.ReadOnly {
		t.Errorf("volume %+v", vol)
	}
	if mount.Name != vol.Name || mount.MountPath != "/models/llama" || mount.SubPath != "main-0123abcd" || !mount.ReadOnly {
		t.Errorf("mount %+v", mount)
	}

	local := Cache{Mode: ModeNodeLocal, HostPath: "/var/lib/model-cache/serving/llama", SubPath: "main-0123abcd", MountPath: "/models/llama"}
	vol, mount, err = local.Mount("weights")
	if err != nil {
		t.Fatal(err)
	}
	if vol.Name != "weights" || vol.HostPath == nil || vol.HostPath.Path != "/var/lib/model-cache/serving/llama/main-0123abcd" ||
		*vol.HostPath.Type != corev1.HostPathDirectory {
		t.Errorf("volume %+v", vol.HostPath)
	}
	if mount.SubPath != "" || !mount.ReadOnly || mount.MountPath != "/models/llama" {
		t.Errorf("mount %+v", mount)
	}

	for _, bad := range []Cache{{Mode: ModePVC, SubPath: "x", MountPath: "/m"}, {Mode: ModeNodeLocal, SubPath: "x", MountPath: "/m"}, {Mode: ModePVC, ClaimName: "c", MountPath: "/m"}, {Mode: "image", SubPath: "x", MountPath: "/m"}} {
		if _, _, err := bad.Mount(""); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestStartupProbe(t *testing.T) {
	handler := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health"}}
	const b70 = 140e9 // 70B parameters in bf16
	for _, tc := range []struct {
		name      string
		cache     Cache
		opts      ProbeOptions
		threshold int32
		period    int32
		err       string
	}{
		// (140e9 / 200 MiB/s + 60 s) × 2 = 1455 s → 146 × 10 s.
		{"70B from a PVC, defaults", Cache{Mode: ModePVC, SizeBytes: b70}, ProbeOptions{}, 146, 10, ""},
		// (140e9 / 1 GiB/s + 60 s) × 2 = 381 s → 39 × 10 s.
		{"70B node-local, defaults", Cache{Mode: ModeNodeLocal, SizeBytes: b70}, ProbeOptions{}, 39, 10, ""},
		// Size not reported: the caller gives it. 16e9 / 1e9 = 16 s, ×1.5, no overhead = 24 s → 5 × 5 s.
		{"size given", Cache{Mode: ModePVC}, ProbeOptions{SizeBytes: 16e9, BytesPerSecond: 1e9, Safety: 1.5, PeriodSeconds: 5, Overhead: -1}, 5, 5, ""},
		{"size unknown", Cache{Mode: ModePVC}, ProbeOptions{}, 0, 0, "size is unknown"},
		{"bad throughput", Cache{Mode: ModePVC, SizeBytes: 1}, ProbeOptions{BytesPerSecond: -1}, 0, 0, "throughput"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, b, err := tc.cache.StartupProbe(handler, tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.FailureThreshold != tc.threshold || p.PeriodSeconds != tc.period || p.HTTPGet == nil || p.HTTPGet.Path != "/health" {
				t.Errorf("probe %+v", p)
			}
			if float64(p.FailureThreshold*p.PeriodSeconds) < b.BudgetSeconds {
				t.Errorf("failureThreshold × periodSeconds = %d < %.0f s", p.FailureThreshold*p.PeriodSeconds, b.BudgetSeconds)
			}
		})
	}
}
