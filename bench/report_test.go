package main

import (
	"strings"
	"testing"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
)

// The summary of the three shapes states each goal as met or missed from
// the measured runs.
func TestSummaryMarkdown(t *testing.T) {
	req := func(n int) telemetry.RequestLog {
		return telemetry.RequestLog{Requests: map[telemetry.RequestKey]int{{Verb: "get", Resource: "clusterqueues.kueue.x-k8s.io"}: n}, PeakVmHWMKiB: 100 << 10}
	}
	rn := func(wall time.Duration, requests int) run { return run{Wall: wall, Requests: req(requests)} }
	runs := func(wall time.Duration, requests int) stepRuns { return stepRuns{rn(wall, requests)} }
	s := summary{
		Platform: &platformResult{ApplyAI: rn(20*time.Second, 700), PlanAI: runs(time.Second, 30), PlanFloor: runs(time.Second/4, 0)},
		Default: &mainResult{Platform: newPlatform(200, ""), Cluster: clusterFacts{Nodes: 5000},
			PlanAI: runs(2*time.Second, 210), PlanFloor: runs(time.Second, 0)},
		Scale: &scaleResult{Platform: newScalePlatform(10, 100, "s-"), Cluster: clusterFacts{Nodes: 5000},
			ApplyAI: rn(time.Minute, 2032), PlanAI: runs(10*time.Second, 2010), PlanFloor: runs(4*time.Second, 0)},
	}
	md := s.markdown(machine{}, "go run ./bench -shape all")
	for _, want := range []string{
		"| whole platform: refresh + plan ≤ 1.50 s on this machine | 1.00 s (terraform_data 0.25 s, 4.0×)",
		"| whole platform: ≤ 40 API requests per plan | 30 (get clusterqueues.kueue.x-k8s.io 30) | | **met** |",
		"| 200 objects on 5000 nodes: refresh + plan ≤ 2.5× `terraform_data` | 2.00× (2.00 s vs 1.00 s) |",
		"| 200 objects on 5000 nodes: ≤ 10 API requests per plan | 210 (get clusterqueues.kueue.x-k8s.io 210) | | **missed** |",
		"| 1000 cluster queues (10 cohorts, 1000 local queues, 5000 nodes): refresh + plan ≤ 3× `terraform_data` | 2.50× (10.00 s vs 4.00 s); 2010 requests per plan |",
		"| 1000 cluster queues: provider RSS ≤ 250 MB | peak 100 MiB (105 MB) (cold apply, plans) | | **met** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if p := newScalePlatform(10, 100, "s-"); p.Total() != 2032 || p.cohortCount() != 10 {
		t.Errorf("scale platform %v: total %d, cohorts %d", p, p.Total(), p.cohortCount())
	}
}
