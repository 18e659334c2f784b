package kserve_test

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// predictorHas checks the predictor pod KServe built from the runtime.
func predictorHas(pool string, containers []corev1.Container, volumes []corev1.Volume, tolerations []corev1.Toleration) error {
	if pool != "h100" {
		return fmt.Errorf("node selector %q, want the runtime's pool h100", pool)
	}
	var c *corev1.Container
	for i := range containers {
		if containers[i].Name == "kserve-container" {
			c = &containers[i]
		}
	}
	if c == nil {
		return fmt.Errorf("no kserve-container among %d containers", len(containers))
	}
	if c.Image != "vllm/vllm-openai:v0.9.0" {
		return fmt.Errorf("image %s", c.Image)
	}
	if args := strings.Join(c.Args, " "); !strings.Contains(args, "--served-model-name llama") || !strings.Contains(args, "--model /mnt/model-cache") {
		return fmt.Errorf("args %q, want the runtime's with {{.Name}} = llama", args)
	}
	if q := c.Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 {
		return fmt.Errorf("GPU limit %s, want 1", q.String())
	}
	if q := c.Resources.Requests["memory"]; q.String() != "32Gi" {
		return fmt.Errorf("memory request %s, want 32Gi", q.String())
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == "model-cache" && m.MountPath == "/mnt/model-cache" && m.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		return fmt.Errorf("mounts %v, want model-cache read-only at /mnt/model-cache", c.VolumeMounts)
	}
	found := false
	for _, v := range volumes {
		if v.Name == "model-cache" && v.HostPath != nil && v.HostPath.Path == "/var/lib/model-cache/default/llama-8b/main-0123abcd" {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("volumes %v, want the cache's hostPath", volumes)
	}
	if c.StartupProbe == nil || c.StartupProbe.FailureThreshold != 15 || c.StartupProbe.HTTPGet == nil || c.StartupProbe.HTTPGet.Path != "/health" {
		return fmt.Errorf("startup probe %+v, want /health with 15 failures", c.StartupProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/health" {
		return fmt.Errorf("liveness probe %+v", c.LivenessProbe)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/v1/models" {
		return fmt.Errorf("readiness probe %+v", c.ReadinessProbe)
	}
	secret := false
	for _, e := range c.Env {
		if e.Name == "HF_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "hf-token" {
			secret = true
		}
	}
	if !secret {
		return fmt.Errorf("env %v, want HF_TOKEN from Secret hf-token", c.Env)
	}
	tolerated := false
	for _, tol := range tolerations {
		if tol.Key == "nvidia.com/gpu" {
			tolerated = true
		}
	}
	if !tolerated {
		return fmt.Errorf("tolerations %v", tolerations)
	}
	return nil
}
