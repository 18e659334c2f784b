package testenv

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The cached binaries are named by the version constants; tools/go.mod decides
// what is actually built. They must agree.
func TestToolsVersions(t *testing.T) {
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(repo, "tools", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for mod, want := range map[string]string{
		"k8s.io/kubernetes":         KubernetesVersion,
		"go.etcd.io/etcd/server/v3": EtcdVersion,
	} {
		if !strings.Contains(string(data), "\t"+mod+" "+want+"\n") {
			t.Errorf("tools/go.mod does not require %s %s", mod, want)
		}
	}
}

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

func TestPKI(t *testing.T) {
	p, err := newPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.caPEM)
	data, err := os.ReadFile(p.servingCert)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	tokens, _ := os.ReadFile(p.tokenFile)
	if want := p.token + `,admin,admin,"system:masters"`; strings.TrimSpace(string(tokens)) != want {
		t.Errorf("token file %q, want %q", tokens, want)
	}
}

func TestReadCRDs(t *testing.T) {
	dir := t.TempDir()
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s.example.com\n"
	files := map[string]string{
		"a.yaml":             strings.ReplaceAll(crd, "%s", "as") + "---\n" + strings.ReplaceAll(crd, "%s", "bs"),
		"kustomization.yaml": "resources:\n- a.yaml\n",
		"notes.txt":          "not yaml",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crds, err := readCRDs([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 2 || crds[0].Name != "as.example.com" || crds[1].Name != "bs.example.com" {
		t.Errorf("readCRDs = %v", crds)
	}
	if _, err := readCRDs([]string{t.TempDir()}); err == nil {
		t.Error("no error for a directory without CRDs")
	}
}

func TestPIDsAndStopProcesses(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	p, err := startProcess("sleep", sleep, []string{"60"}, filepath.Join(dir, "sleep.log"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePIDs(dir, []Process{p.Process}); err != nil {
		t.Fatal(err)
	}
	procs, err := ReadPIDs(dir)
	if err != nil || len(procs) != 1 || procs[0] != p.Process {
		t.Fatalf("ReadPIDs = %v, %v", procs, err)
	}
	if !procs[0].Alive() {
		t.Fatal("not alive")
	}
	if (Process{PID: p.PID, Path: "/something/else"}).Alive() {
		t.Error("alive under another binary's name")
	}
	StopProcesses(procs)
	<-p.done
	if procs[0].Alive() {
		t.Error("alive after StopProcesses")
	}
	if none, err := ReadPIDs(t.TempDir()); none != nil || err != nil {
		t.Errorf("ReadPIDs of an empty dir = %v, %v", none, err)
	}
}
