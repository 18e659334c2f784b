package training

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/fabric"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

func testSpec() *spec {
	return &spec{
		Ref:           kube.Ref{Namespace: "fabric", Name: "h100"},
		Selector:      map[string]string{"pool": "h100"},
		Tolerations:   []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		NodeNames:     []string{"gpu-a", "gpu-b"},
		GPUsPerNode:   8,
		GPUResource:   "nvidia.com/gpu",
		Image:         DefaultImage,
		Command:       []string{"mpirun", "-np", "16"},
		WorkerCommand: DefaultWorkerCommand,
		Timeout:       20 * time.Minute,
		Input:         fabric.Input{PeakGBps: 100, NICsPerNode: 4, Thresholds: fabric.DefaultThresholds(), FailOn: fabric.FailOnBad},
	}
}

// podTemplate decodes a replica's pod template from the rendered MPIJob.
func podTemplate(t *testing.T, job *unstructured.Unstructured, replica string) (corev1.PodTemplateSpec, map[string]any) {
	t.Helper()
	rs, ok, _ := unstructured.NestedMap(job.Object, "spec", "mpiReplicaSpecs", replica)
	if !ok {
		t.Fatalf("no %s replica spec in %v", replica, job.Object)
	}
	var tpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rs["template"].(map[string]any), &tpl); err != nil {
		t.Fatal(err)
	}
	return tpl, rs
}

func TestMPIJobRendering(t *testing.T) {
	s := testSpec()
	job := mpiJob(s)
	if job.GetAPIVersion() != "kubeflow.org/v2beta1" || job.GetKind() != "MPIJob" || job.GetNamespace() != "fabric" || job.GetName() != "h100" {
		t.Fatalf("object %s %s %s/%s", job.GetAPIVersion(), job.GetKind(), job.GetNamespace(), job.GetName())
	}
	if _, ok := job.GetLabels()[queueLabel]; ok {
		t.Errorf("queue label without queue_name: %v", job.GetLabels())
	}
	for path, want := range map[string]any{
		"spec.slotsPerWorker":                         int64(8),
		"spec.mpiImplementation":                      "OpenMPI",
		"spec.launcherCreationPolicy":                 "WaitForWorkersReady",
		"spec.runPolicy.cleanPodPolicy":               "All",
		"spec.runPolicy.backoffLimit":                 int64(0),
		"spec.runPolicy.activeDeadlineSeconds":        int64(1200),
		"spec.mpiReplicaSpecs.Launcher.replicas":      int64(1),
		"spec.mpiReplicaSpecs.Launcher.restartPolicy": "Never",
		"spec.mpiReplicaSpecs.Worker.replicas":        int64(2),
		"spec.mpiReplicaSpecs.Worker.restartPolicy":   "Never",
	} {
		got, _, _ := unstructured.NestedFieldNoCopy(job.Object, strings.Split(path, ".")...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}

	launcher, _ := podTemplate(t, job, "Launcher")
	if c := launcher.Spec.Containers; len(c) != 1 || c[0].Name != launcherContainer || !reflect.DeepEqual(c[0].Command, s.Command) || c[0].Image != DefaultImage {
		t.Errorf("launcher containers %+v", c)
	}
	if _, gpu := launcher.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; gpu || launcher.Spec.NodeSelector != nil {
		t.Errorf("the launcher needs no GPU and no pool node: %+v", launcher.Spec)
	}

	worker, _ := podTemplate(t, job, "Worker")
	w := worker.Spec
	if len(w.Containers) != 1 || !reflect.DeepEqual(w.Containers[0].Command, DefaultWorkerCommand) {
		t.Errorf("worker containers %+v", w.Containers)
	}
	if q := w.Containers[0].Resources.Limits["nvidia.com/gpu"]; q.Value() != 8 {
		t.Errorf("worker GPUs %v", q.String())
	}
	if w.Containers[0].SecurityContext != nil || w.HostNetwork || w.DNSPolicy != "" {
		t.Errorf("no RDMA and no host network asked for: %+v", w)
	}
	if !reflect.DeepEqual(w.NodeSelector, s.Selector) || !reflect.DeepEqual(w.Tolerations, s.Tolerations) {
		t.Errorf("worker placement %v %v", w.NodeSelector, w.Tolerations)
	}
	terms := w.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	// One term per node (terms are ORed): a node field selector takes one value.
	var pinned []string
	for _, term := range terms {
		if len(term.MatchFields) != 1 || term.MatchFields[0].Key != "metadata.name" || len(term.MatchFields[0].Values) != 1 {
			t.Fatalf("a term is not one node name: %+v", term)
		}
		pinned = append(pinned, term.MatchFields[0].Values[0])
	}
	if !reflect.DeepEqual(pinned, []string{"gpu-a", "gpu-b"}) {
		t.Errorf("workers not pinned to the planned nodes: %+v", terms)
	}
	anti := w.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(anti) != 1 || anti[0].TopologyKey != corev1.LabelHostname || anti[0].LabelSelector.MatchLabels[JobNameLabel] != "h100" {
		t.Errorf("workers not one per node: %+v", anti)
	}
}

func TestMPIJobOptions(t *testing.T) {
	s := testSpec()
	s.Queue, s.HostNetwork, s.RDMA = "training", true, map[string]int64{"rdma/ib": 1, "rdma/roce": 2}
	job := mpiJob(s)
	if job.GetLabels()[queueLabel] != "training" {
		t.Errorf("labels %v", job.GetLabels())
	}
	worker, _ := podTemplate(t, job, "Worker")
	w := worker.Spec
	if !w.HostNetwork || w.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("host network %v dns %q", w.HostNetwork, w.DNSPolicy)
	}
	lim := w.Containers[0].Resources.Limits
	if ib, roce := lim["rdma/ib"], lim["rdma/roce"]; ib.Value() != 1 || roce.Value() != 2 {
		t.Errorf("limits %v", lim)
	}
	if sc := w.Containers[0].SecurityContext; sc == nil || len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "IPC_LOCK" {
		t.Errorf("RDMA without IPC_LOCK: %+v", sc)
	}
}

func TestDefaultCommand(t *testing.T) {
	m := &checkModel{
		Nodes: types.Int64Value(2), GPUsPerNode: types.Int64Value(8),
		Binary: types.StringValue("all_reduce_perf"), BinaryDir: types.StringValue(fabric.DefaultBinaryDir),
		MinBytes: types.StringValue("8"), MaxBytes: types.StringValue("8G"),
		StepFactor: types.Int64Value(2), Iterations: types.Int64Value(20), Warmup: types.Int64Value(5),
		Env: types.MapValueMust(types.StringType, map[string]attr.Value{"NCCL_DEBUG": types.StringValue("INFO")}),
	}
	got, ok := defaultCommand(context.Background(), m)
	want := "mpirun --allow-run-as-root -np 16 --map-by ppr:8:node --bind-to none -x NCCL_DEBUG=INFO " +
		"/opt/nccl_tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 -n 20 -w 5 -c 1"
	if !ok || strings.Join(got, " ") != want {
		t.Errorf("command %q (ok %v), want %q", strings.Join(got, " "), ok, want)
	}
	m.Nodes = types.Int64Unknown()
	if _, ok := defaultCommand(context.Background(), m); ok {
		t.Error("a command with unknown nodes")
	}
}

func readLog(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fabric", "testdata", "published", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func pod(phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
	p.Name = "h100-launcher-x"
	if phase == corev1.PodFailed {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: launcherContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	}
	return p
}

func readMade(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fabric", "testdata", "made", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The 4 × 200 Gb/s HDR run of nccl-tests issue #119: the last row's 95.74
// GB/s (not the table's highest, 96.69, two rows earlier) of a 100 GB/s
// peak is good, every computed attribute comes from the log, and a good
// run warns nothing.
func TestJudgeAndRecordGoodRun(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	o, err := judge(testSpec(), pod(corev1.PodSucceeded), "", kube.PodLog{Text: readLog(t, "ib_footer_nccl-tests119.log")}, at)
	if err != nil {
		t.Fatal(err)
	}
	m := &checkModel{NodesTested: stringListValue([]string{"gpu-a", "gpu-b"})}
	if diags := record(m, o); len(diags) != 0 {
		t.Errorf("a good run warns: %v", diags)
	}
	if m.BusBW.ValueFloat64() != 95.74 || m.BusBWAtBytes.ValueInt64() != 133169160 || m.AvgBusBW.ValueFloat64() != 84.8558 ||
		m.Ratio.ValueFloat64() != 0.9574 || m.Verdict.ValueString() != "good" || m.OutOfBounds.ValueInt64() != 0 ||
		m.Transport.ValueString() != "" || m.RanAt.ValueString() != "2026-11-30T12:00:00Z" {
		t.Errorf("recorded %+v", m)
	}
	if len(m.Results.Elements()) != 6 {
		t.Fatalf("results %v", m.Results)
	}
	first := m.Results.Elements()[0].(types.Object).Attributes()
	if first["size_bytes"].(types.Int64).ValueInt64() != 127926280 || first["busbw_gbps"].(types.Float64).ValueFloat64() != 95.75 ||
		first["in_place_busbw_gbps"].(types.Float64).ValueFloat64() != 95.92 || first["wrong"].(types.Int64).ValueInt64() != 0 ||
		first["redop"].(types.String).ValueString() != "sum" {
		t.Errorf("first row %v", first)
	}
	if len(listValues(m.NodesTested)) != 2 {
		t.Errorf("nodes_tested changed: %v", m.NodesTested)
	}
	consistent(t, m, 100)
}

// consistent: busbw_gbps, busbw_at_bytes and ratio describe the last row of
// results (the largest size), and ratio is busbw_gbps ÷ the peak.
func consistent(t *testing.T, m *checkModel, peak float64) {
	t.Helper()
	rows := m.Results.Elements()
	last := rows[len(rows)-1].(types.Object).Attributes()
	if last["size_bytes"].(types.Int64).ValueInt64() != m.BusBWAtBytes.ValueInt64() ||
		last["busbw_gbps"].(types.Float64).ValueFloat64() != m.BusBW.ValueFloat64() ||
		math.Abs(m.Ratio.ValueFloat64()-m.BusBW.ValueFloat64()/peak) > 1e-4 {
		t.Errorf("busbw %v at %d ratio %v, last row %v", m.BusBW, m.BusBWAtBytes.ValueInt64(), m.Ratio, last)
	}
}

// The invented logs of internal/fabric/testdata/made through judge and
// record, as an apply sees them on a 4 × 200 Gb/s (100 GB/s) pool.
func TestJudgeAndRecordMadeLogs(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		log      string
		peak     float64
		nics     int64
		failOn   fabric.FailOn
		verdict  string  // recorded ("" when the apply fails)
		busbw    float64 // recorded
		warning  []string
		failure  []string
		notInErr []string
	}{
		{log: "good_8x400_ib.log", peak: 400, nics: 8, verdict: "good", busbw: 372.40},
		{log: "acceptable_4x200_ib.log", peak: 100, nics: 4, verdict: "acceptable", busbw: 85.31,
			warning: []string{"NCCL check fabric/h100: acceptable (85.3% of the peak at the largest size)",
				"fail_on = bad", "verdict: acceptable — busbw 85.31 GB/s at the largest size (8 GiB, the table's last row) is 85.3% of the 100.00 GB/s peak (4 NICs × 200 Gb/s ÷ 8)",
				"  1. NCCL_SOCKET_IFNAME", "  2. NCCL_IB_HCA", "  3. MTU and GID index", "  4. The pods resolve and reach each other",
				"getent hosts h100-worker-1.h100.fabric.svc", "  5. hostNetwork: true for RoCE"}},
		{log: "collapse_4x200_roce.log", peak: 100, nics: 4,
			failure: []string{"NCCL check fabric/h100: bad", "verdict: bad — busbw 61.04 GB/s at the largest size (8 GiB, the table's last row) is 61.0%",
				"97.02 GB/s (97.0%, good) at 2 GiB", "transport: RoCE", "* 3. MTU and GID index", "* 5. hostNetwork: true for RoCE"},
			notInErr: []string{"verdict: good"}},
		{log: "collapse_4x200_roce.log", peak: 100, nics: 4, failOn: fabric.FailOnNever, verdict: "bad", busbw: 61.04,
			warning: []string{"NCCL check fabric/h100: bad (61.0% of the peak at the largest size)", "fail_on = never"}},
		{log: "oob_failed_4x200_ib.log", peak: 100, nics: 4, failOn: fabric.FailOnNever,
			failure:  []string{"NCCL check fabric/h100: out_of_bounds", "verdict: out_of_bounds", "Out of bounds values : 3 FAILED"},
			notInErr: []string{"good", "average"}},
		{log: "truncated_4x200_ib.log", peak: 100, nics: 4,
			failure:  []string{"NCCL check fabric/h100: truncated", "verdict: truncated", "cut off after 11 rows (last size 1 GiB) of the 8 GiB"},
			notInErr: []string{"good", "average"}},
	} {
		t.Run(tc.log+"/"+string(tc.failOn), func(t *testing.T) {
			s := testSpec()
			s.Input.PeakGBps, s.Input.NICsPerNode = tc.peak, tc.nics
			if tc.failOn != "" {
				s.Input.FailOn = tc.failOn
			}
			o, err := judge(s, pod(corev1.PodSucceeded), "", kube.PodLog{Text: readMade(t, tc.log)}, at)
			if tc.verdict == "" {
				if err == nil {
					t.Fatalf("recorded %s, want a failure", o.Eval.Verdict)
				}
				for _, w := range tc.failure {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%v", w, err)
					}
				}
				for _, w := range tc.notInErr {
					if strings.Contains(err.Error(), w) {
						t.Errorf("error has %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := &checkModel{}
			diags := record(m, o)
			if m.Verdict.ValueString() != tc.verdict || m.BusBW.ValueFloat64() != tc.busbw || m.BusBWAtBytes.ValueInt64() != 8<<30 {
				t.Errorf("recorded %s %v at %d", m.Verdict, m.BusBW, m.BusBWAtBytes.ValueInt64())
			}
			consistent(t, m, tc.peak)
			if len(tc.warning) == 0 {
				if len(diags) != 0 {
					t.Errorf("diagnostics %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Severity() != diag.SeverityWarning {
				t.Fatalf("diagnostics %v, want one warning", diags)
			}
			text := diags[0].Summary() + "\n" + diags[0].Detail()
			for _, w := range tc.warning {
				if !strings.Contains(text, w) {
					t.Errorf("warning lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestJudgeFailures(t *testing.T) {
	cases := []struct {
		name     string
		spec     func(*spec)
		launcher corev1.PodPhase
		log      string
		want     []string
	}{
		{name: "bad verdict", spec: func(s *spec) { s.Input.PeakGBps = 400; s.Input.NICsPerNode = 8 }, launcher: corev1.PodSucceeded,
			log: "ib_footer_nccl-tests119.log", want: []string{"23.9%", "verdict: bad", "fail_on = bad", "checklist, in this order", "NCCL_DEBUG=INFO"}},
		{name: "acceptable fails with fail_on acceptable", spec: func(s *spec) { s.Input.PeakGBps = 112; s.Input.FailOn = fabric.FailOnAcceptable },
			launcher: corev1.PodSucceeded, log: "ib_footer_nccl-tests119.log", want: []string{"acceptable", "fail_on = acceptable"}},
		{name: "out of bounds fails even with fail_on never", spec: func(s *spec) { s.Input.PeakGBps = 100; s.Input.FailOn = fabric.FailOnNever },
			launcher: corev1.PodSucceeded, log: "oob_failed_old_format.log", want: []string{"verdict: out_of_bounds", "Out of bounds values : 2 FAILED", "Wrong values"}},
		{name: "no table", launcher: corev1.PodSucceeded, log: "roce_failed_nccl2.19.3.log",
			want: []string{"verdict: no_result", "no result table", "last lines of the launcher's log", "RoCE"}},
		{name: "truncated", launcher: corev1.PodSucceeded, log: "socket_truncated_nccl2.25.1.log",
			want: []string{"verdict: truncated", "NET/Socket", "NCCL_IB_DISABLE set by environment to 1"}},
		{name: "launcher failed", launcher: corev1.PodFailed, log: "roce_failed_nccl2.19.3.log",
			want: []string{"launcher pod h100-launcher-x is Failed", "exited with code 1", "RoCE"}},
		// A launcher that failed after printing a whole, good table is no verdict on the fabric.
		{name: "launcher failed after a good table", launcher: corev1.PodFailed, log: "ib_footer_nccl-tests119.log",
			want: []string{"NCCL check fabric/h100: failed", "verdict: failed — the launcher failed: the bandwidth is not judged", "exited with code 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			if tc.spec != nil {
				tc.spec(s)
			}
			o, err := judge(s, pod(tc.launcher), "", kube.PodLog{Text: readLog(t, tc.log)}, time.Now())
			if err == nil {
				t.Fatalf("judged %+v, want a failure", o.Eval)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestStuckPods(t *testing.T) {
	p := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "worker",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"nope\""}}}}}}
	p.Name, p.Labels = "h100-worker-0", map[string]string{JobRoleLabel: "worker"}
	if why := stuck(&p); !strings.Contains(why, "ImagePullBackOff") || !strings.Contains(why, "h100-worker-0 (worker)") {
		t.Errorf("stuck = %q", why)
	}
	u := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}}}
	u.Name = "h100-worker-1"
	if why := stuck(&u); why != "" {
		t.Errorf("an unschedulable pod may still be scheduled (autoscaler, Kueue): %q", why)
	}
	if story := podStories([]corev1.Pod{u}); !strings.Contains(story, "Unschedulable 0/3 nodes are available") {
		t.Errorf("story %q", story)
	}
}

func TestNodeChange(t *testing.T) {
	got := nodeChange(stringListValue([]string{"a", "b"}), stringListValue([]string{"a", "c", "d"}))
	if got != "the nodes the check would use changed (joined: c, d; left or not Ready: b)" {
		t.Errorf("%q", got)
	}
}
