package nodes

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestNodePoolNode(t *testing.T) {
	n, err := NodePool{Name: "a100", GPUs: 4, Product: "NVIDIA-A100-SXM4-80GB", Labels: map[string]string{"pool": "a"}}.node("a100-0")
	if err != nil {
		t.Fatal(err)
	}
	if n.Annotations[NodeAnnotation] != "fake" || n.Labels["type"] != "kwok" || n.Labels["pool"] != "a" ||
		n.Labels[GPUProductLabel] != "NVIDIA-A100-SXM4-80GB" || n.Labels[GPUCountLabel] != "4" {
		t.Errorf("metadata: %+v", n.ObjectMeta)
	}
	if _, ok := n.Labels[GPUMemoryLabel]; ok {
		t.Error("gpu.memory label set without GPUMemory")
	}
	gpu, cpu, mem := n.Status.Allocatable[GPUResource], n.Status.Capacity["cpu"], n.Status.Capacity["memory"]
	if gpu.Value() != 4 || cpu.String() != "32" || mem.String() != "256Gi" {
		t.Errorf("resources: allocatable %v capacity %v", n.Status.Allocatable, n.Status.Capacity)
	}
	if len(n.Spec.Taints) != 0 {
		t.Errorf("taints: %v", n.Spec.Taints)
	}
	cpuOnly, _ := NodePool{Name: "cpu"}.node("cpu-0")
	if _, ok := cpuOnly.Status.Capacity[GPUResource]; ok {
		t.Error("CPU-only node has GPUs")
	}
}

func TestWithDelayFromAnnotation(t *testing.T) {
	out, err := withDelayFromAnnotation([]byte("kind: Stage\nspec:\n  next:\n    statusTemplate: |\n      phase: Succeeded\n"), PodCompleteDelayAnnotation, "")
	if err != nil {
		t.Fatal(err)
	}
	var stage struct {
		Spec struct {
			Delay struct {
				DurationMilliseconds *int `json:"durationMilliseconds"`
				DurationFrom         struct {
					ExpressionFrom string `json:"expressionFrom"`
				} `json:"durationFrom"`
			} `json:"delay"`
			Next struct {
				StatusTemplate string `json:"statusTemplate"`
			} `json:"next"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &stage); err != nil {
		t.Fatal(err)
	}
	d := stage.Spec.Delay
	if d.DurationMilliseconds == nil || *d.DurationMilliseconds != 0 ||
		d.DurationFrom.ExpressionFrom != `.metadata.annotations["pod-complete.stage.kwok.x-k8s.io/delay"]` ||
		stage.Spec.Next.StatusTemplate != "phase: Succeeded\n" {
		t.Errorf("stage: %s", out)
	}
}

// Pods with PodFailAnnotation are left to the pod-fail stage: pod-complete
// excludes them, and the pod-fail stage parses.
func TestPodFailStage(t *testing.T) {
	out, err := withDelayFromAnnotation([]byte("kind: Stage\nspec:\n  selector:\n    matchExpressions:\n    - key: '.status.phase'\n      operator: In\n      values: [Running]\n"), PodCompleteDelayAnnotation, PodFailAnnotation)
	if err != nil {
		t.Fatal(err)
	}
	var stage struct {
		Spec struct {
			Selector struct {
				MatchExpressions []struct{ Key, Operator string } `json:"matchExpressions"`
			} `json:"selector"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &stage); err != nil {
		t.Fatal(err)
	}
	exprs := stage.Spec.Selector.MatchExpressions
	if len(exprs) != 2 || exprs[1].Key != `.metadata.annotations["pod-fail.stage.kwok.x-k8s.io/message"]` || exprs[1].Operator != "DoesNotExist" {
		t.Errorf("pod-complete selector: %s", out)
	}
	fail, err := withDelayFromAnnotation([]byte(podFailStage), PodCompleteDelayAnnotation, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fail), "phase: Failed") || !strings.Contains(string(fail), "durationFrom") {
		t.Errorf("pod-fail stage: %s", fail)
	}
}

// kwok's pod-ready stage gets a selector that leaves the runner's images alone.
func TestWithoutImages(t *testing.T) {
	stage := []byte("apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: pod-ready\nspec:\n  selector:\n    matchExpressions:\n    - key: .status.phase\n      operator: In\n      values: [Pending]\n")
	out, err := withoutImages(stage, `^registry\.k8s\.io/kueue/kueue[:@]`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Spec struct {
			Selector struct {
				MatchExpressions []struct {
					Key      string   `json:"key"`
					Operator string   `json:"operator"`
					Values   []string `json:"values"`
				} `json:"matchExpressions"`
			} `json:"selector"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	exprs := got.Spec.Selector.MatchExpressions
	want := `[.spec.containers[].image | test("^registry\\.k8s\\.io/kueue/kueue[:@]")] | any`
	if len(exprs) != 2 || exprs[0].Key != ".status.phase" || exprs[1].Key != want || exprs[1].Operator != "NotIn" || strings.Join(exprs[1].Values, ",") != "true" {
		t.Errorf("stage:\n%s\nwant the phase expression and %s NotIn [true]", out, want)
	}
}

// kwok's pod-ready stage leaves a Command's container (image and name) to
// the runner.
func TestWithoutContainer(t *testing.T) {
	stage := []byte("apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: pod-ready\nspec:\n  selector: {}\n")
	out, err := withoutContainer(stage, Container{Image: `^ghcr\.io/x:`, Name: "launcher"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Spec struct {
			Selector struct {
				MatchExpressions []struct {
					Key      string   `json:"key"`
					Operator string   `json:"operator"`
					Values   []string `json:"values"`
				} `json:"matchExpressions"`
			} `json:"selector"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	exprs := got.Spec.Selector.MatchExpressions
	want := `[.spec.containers[] | (.image | test("^ghcr\\.io/x:")) and .name == "launcher"] | any`
	if len(exprs) != 1 || exprs[0].Key != want || exprs[0].Operator != "NotIn" || strings.Join(exprs[0].Values, ",") != "true" {
		t.Errorf("stage:\n%s\nwant %s NotIn [true]", out, want)
	}
}
