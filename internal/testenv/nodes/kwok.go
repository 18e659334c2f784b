package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// KwokVersion is the version of kwok testenv builds and runs.
const KwokVersion = "v0.8.0"

// Kwok is the name of kwok's process and binary.
const Kwok = "kwok"

// KwokSpec builds kwok in tools/k8s-v0.36 with the controllers of its
// Kubernetes generation.
var KwokSpec = binaries.Spec{Name: Kwok, Version: KwokVersion, Module: "sigs.k8s.io/kwok", Package: "sigs.k8s.io/kwok/cmd/kwok",
	Dir: binaries.K8s036, ColdBuild: "~2.5 min alone, ~1 with tools/k8s-v0.36 built"}

// KwokOptions are how StartKwok runs kwok.
type KwokOptions struct {
	Lease time.Duration // node lease duration
	// RunnerImages is a regular expression ("" for none): pods with a
	// container image matching it are left to the pod runner.
	RunnerImages string
	// RunnerContainers are containers (image pattern and name) whose pods
	// are left to the pod runner too.
	RunnerContainers []Container
	// NodePort, when set, is published as every node's kubelet port
	// (status.daemonEndpoints); kwok's own server then listens on
	// 127.0.0.1:ServerPort instead of all interfaces.
	NodePort, ServerPort int
}

// Container names a container: an image pattern (regular expression) and a
// container name ("" for any).
type Container struct{ Image, Name string }

// StartKwok starts kwok with the admin kubeconfig and its configuration
// written into dir (see writeKwokConfig), managing the nodes annotated
// NodeAnnotation=fake, and gives it a moment to fail on a bad flag or
// config.
func StartKwok(ctx context.Context, procs *process.Group, bin, dir, kubeconfig string, o KwokOptions) (*process.Proc, error) {
	kwokConfig, err := writeKwokConfig(ctx, dir, o.RunnerImages, o.RunnerContainers)
	if err != nil {
		return nil, err
	}
	lease := o.Lease
	var ports []string
	if o.NodePort > 0 {
		ports = []string{fmt.Sprintf("--node-port=%d", o.NodePort), fmt.Sprintf("--server-address=127.0.0.1:%d", o.ServerPort)}
	}
	return procs.Start(Kwok, bin, append(ports,
		"--kubeconfig="+kubeconfig,
		"--config="+kwokConfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+NodeAnnotation+"=fake",
		fmt.Sprintf("--node-lease-duration-seconds=%d", int(lease.Seconds())), // without it kwok keeps no node leases and nodes go NotReady
		"--node-ip=127.0.0.1",
		"--cidr=10.244.0.0/16", // pod IPs: never routed, only reported in pod status
	))
}

// CheckKwok waits a moment for kwok to fail: it serves nothing we can poll;
// its readiness shows as nodes turning Ready.
func CheckKwok(p *process.Proc, logPath string) error {
	select {
	case <-p.Done():
		return fmt.Errorf("testenv: kwok exited (%v)\n%s", p.Err(), process.LogTail(logPath))
	case <-time.After(200 * time.Millisecond):
	}
	return nil
}

// PodCompleteDelayAnnotation on a Job's pod sets how long kwok keeps it Running
// before it Succeeds: a Go duration ("30s") or an RFC 3339 time. Without it the
// pod completes as soon as it is Running.
const PodCompleteDelayAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"

// PodFailAnnotation on a pod makes kwok fail it instead of completing it: once
// Running (and after PodCompleteDelayAnnotation, if set) the pod turns Failed,
// its first init container (or, without init containers, its containers)
// terminated with exit code 1, reason Error and the annotation's value as the
// termination message. Works for any pod, not only a Job's: a DaemonSet's
// failed pod is replaced by its controller, and fails again.
const PodFailAnnotation = "pod-fail.stage.kwok.x-k8s.io/message"

// podFailStage is the Stage behind PodFailAnnotation; its delay is set by
// withDelayFromAnnotation like pod-complete's.
const podFailStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-fail
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.annotations["` + PodFailAnnotation + `"]'
      operator: 'Exists'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $message := index .metadata.annotations "` + PodFailAnnotation + `" }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: ContainersReady
      {{ if .spec.initContainers }}
      initContainerStatuses:
      {{ range $index, $item := .spec.initContainers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        state:
      {{ if eq $index 0 }}
          terminated:
            exitCode: 1
            finishedAt: {{ $now | Quote }}
            reason: Error
            message: {{ $message | Quote }}
            startedAt: {{ $now | Quote }}
      {{ else }}
          waiting:
            reason: PodInitializing
      {{ end }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          waiting:
            reason: PodInitializing
      {{ end }}
      {{ else }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          terminated:
            exitCode: 1
            finishedAt: {{ $now | Quote }}
            reason: Error
            message: {{ $message | Quote }}
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ end }}
      phase: Failed
`

// kwokStages are the kwok Stage files (under kustomize/stage/ in the kwok
// module) that make nodes Ready and keep them so, and pods Running, Succeeded
// (Job pods) and deleted.
var kwokStages = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// writeKwokConfig writes <dir>/kwok.yaml: the stages read from the kwok module
// in the module cache (kwok refuses to start without any), pod-complete given
// a delay taken from PodCompleteDelayAnnotation and leaving pods with
// PodFailAnnotation to the pod-fail stage, which has the same delay. Pods
// with a container image matching runnerImages (a regular expression, ""
// for none) are left to the pod runner by pod-ready.
func writeKwokConfig(ctx context.Context, dir, runnerImages string, runnerContainers []Container) (string, error) {
	mod, err := binaries.ModuleDir(ctx, "sigs.k8s.io/kwok", KwokVersion)
	if err != nil {
		return "", err
	}
	var docs []string
	for _, name := range kwokStages {
		data, err := os.ReadFile(filepath.Join(mod, "kustomize", "stage", filepath.FromSlash(name)))
		if err != nil {
			return "", fmt.Errorf("testenv: kwok stage: %w", err)
		}
		if filepath.Base(name) == "pod-ready.yaml" && runnerImages != "" {
			if data, err = withoutImages(data, runnerImages); err != nil {
				return "", err
			}
		}
		if filepath.Base(name) == "pod-ready.yaml" {
			for _, c := range runnerContainers {
				if data, err = withoutContainer(data, c); err != nil {
					return "", err
				}
			}
		}
		if filepath.Base(name) == "pod-complete.yaml" {
			if data, err = withDelayFromAnnotation(data, PodCompleteDelayAnnotation, PodFailAnnotation); err != nil {
				return "", err
			}
		}
		docs = append(docs, strings.TrimSpace(string(data)))
	}
	fail, err := withDelayFromAnnotation([]byte(podFailStage), PodCompleteDelayAnnotation, "")
	if err != nil {
		return "", err
	}
	docs = append(docs, strings.TrimSpace(string(fail)))
	path := filepath.Join(dir, "kwok.yaml")
	return path, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644)
}

// withDelayFromAnnotation sets a Stage's spec.delay to 0 unless the object has
// the annotation, whose value is then the delay. A non-empty unless excludes
// objects that have that annotation from the stage.
func withDelayFromAnnotation(stage []byte, annotation, unless string) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return nil, err
	}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("testenv: kwok stage without spec")
	}
	if unless != "" {
		sel, _ := spec["selector"].(map[string]any)
		if sel == nil {
			sel = map[string]any{}
			spec["selector"] = sel
		}
		exprs, _ := sel["matchExpressions"].([]any)
		sel["matchExpressions"] = append(exprs, map[string]any{
			"key": fmt.Sprintf(".metadata.annotations[%q]", unless), "operator": "DoesNotExist",
		})
	}
	spec["delay"] = map[string]any{
		"durationMilliseconds": 0,
		"durationFrom": map[string]any{
			"expressionFrom": fmt.Sprintf(".metadata.annotations[%q]", annotation),
		},
	}
	return yaml.Marshal(obj)
}

// withoutImages adds to a kwok Stage's selector that no container's image
// matches pattern (a Go regular expression, as gojq's test uses).
func withoutImages(stage []byte, pattern string) ([]byte, error) {
	quoted, err := json.Marshal(pattern)
	if err != nil {
		return nil, err
	}
	return excludePods(stage, fmt.Sprintf("[.spec.containers[].image | test(%s)] | any", quoted))
}

// withoutContainer adds to a kwok Stage's selector that no container has
// c's name (any, when "") and an image matching c.Image.
func withoutContainer(stage []byte, c Container) ([]byte, error) {
	image, err := json.Marshal(c.Image)
	if err != nil {
		return nil, err
	}
	match := fmt.Sprintf("(.image | test(%s))", image)
	if c.Name != "" {
		name, err := json.Marshal(c.Name)
		if err != nil {
			return nil, err
		}
		match += fmt.Sprintf(" and .name == %s", name)
	}
	return excludePods(stage, fmt.Sprintf("[.spec.containers[] | %s] | any", match))
}

// excludePods adds to a kwok Stage's selector that the jq expression key
// (over the pod) is not true, so the stage leaves those pods alone.
func excludePods(stage []byte, key string) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil, errors.New("testenv: kwok stage without spec")
	}
	sel, _ := spec["selector"].(map[string]any)
	if sel == nil {
		sel = map[string]any{}
		spec["selector"] = sel
	}
	exprs, _ := sel["matchExpressions"].([]any)
	sel["matchExpressions"] = append(exprs, map[string]any{"key": key, "operator": "NotIn", "values": []any{"true"}})
	return yaml.Marshal(obj)
}
