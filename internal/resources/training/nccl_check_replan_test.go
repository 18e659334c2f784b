package training

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/fabric"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The replacement plan when the pool's live nodes change, run through the
// resource's ModifyPlan against the test cluster's nodes. (A state with a
// recorded result needs a finished run, i.e. the MPI Operator: without it,
// this drives the plan the way Terraform does — configuration, proposed plan
// and prior state — and TestAccNCCLCheckEndToEnd does the same through the
// CLI once the operator is there.)

func checkSchema(t *testing.T) schema.Schema {
	var resp resource.SchemaResponse
	(&ncclCheck{}).Schema(context.Background(), resource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	return resp.Schema
}

// configModel is the configuration of a check on pool "nj": everything the
// user did not write is null.
func configModel(triggers string) checkModel {
	m := checkModel{
		Timeouts:      object.NullTimeouts(false),
		Name:          types.StringValue("fabric"),
		NodeSelector:  types.MapValueMust(types.StringType, map[string]attr.Value{"testpool": types.StringValue("nj")}),
		GPUsPerNode:   types.Int64Value(8),
		NICsPerNode:   types.Int64Value(4),
		NICGbps:       types.Float64Value(200),
		Tolerations:   types.ListNull(types.ObjectType{AttrTypes: tolerationTypes}),
		Command:       types.ListNull(types.StringType),
		WorkerCommand: types.ListNull(types.StringType),
		Env:           types.MapNull(types.StringType),
		RDMAResources: types.MapNull(types.Int64Type),
		Triggers:      types.MapNull(types.StringType),
		Results:       types.ListNull(types.ObjectType{AttrTypes: rowTypes}),
		NodesTested:   types.ListNull(types.StringType),
	}
	if triggers != "" {
		m.Triggers = types.MapValueMust(types.StringType, map[string]attr.Value{"driver": types.StringValue(triggers)})
	}
	return m
}

// proposed is what Terraform proposes before ModifyPlan: defaults applied,
// computed attributes from the prior state (or unknown when creating).
func proposed(config checkModel, prior *checkModel) checkModel {
	p := config
	p.Namespace, p.GPUResource, p.Image = types.StringValue(DefaultNamespace), types.StringValue(capacity.DefaultGPUResource), types.StringValue(DefaultImage)
	p.WorkerCommand = stringListValue(DefaultWorkerCommand)
	p.Binary, p.BinaryDir = types.StringValue(fabric.DefaultBinary), types.StringValue(fabric.DefaultBinaryDir)
	p.MinBytes, p.MaxBytes = types.StringValue(DefaultMinBytes), types.StringValue(DefaultMaxBytes)
	p.StepFactor, p.Iterations, p.Warmup = types.Int64Value(DefaultStep), types.Int64Value(DefaultIters), types.Int64Value(DefaultWarmup)
	p.HostNetwork = types.BoolValue(false)
	p.GoodRatio, p.AcceptableRatio = types.Float64Value(fabric.DefaultGoodRatio), types.Float64Value(fabric.DefaultAcceptableRatio)
	p.FailOn = types.StringValue(string(fabric.FailOnBad))
	if p.Timeout.IsNull() {
		p.Timeout = types.StringValue(DefaultTimeout)
	}
	if prior == nil {
		p.ID, p.Nodes, p.Command, p.PeakBusBW = types.StringUnknown(), types.Int64Unknown(), types.ListUnknown(types.StringType), types.Float64Unknown()
		unknownResult(&p)
		p.NodesTested = types.ListUnknown(types.StringType)
		return p
	}
	p.ID, p.Nodes, p.Command, p.PeakBusBW = prior.ID, prior.Nodes, prior.Command, prior.PeakBusBW
	keepResult(&p, prior)
	return p
}

type plannedCheck struct {
	model   checkModel
	replace tfpath.Paths
	diags   diag.Diagnostics
}

func modifyPlan(t *testing.T, c *kube.Client, config checkModel, prior *checkModel) plannedCheck {
	t.Helper()
	ctx := context.Background()
	sch := checkSchema(t)
	plan := tfsdk.Plan{Schema: sch}
	if d := plan.Set(ctx, &config); d.HasError() {
		t.Fatal(d)
	}
	cfg := tfsdk.Config{Schema: sch, Raw: plan.Raw}
	prop := proposed(config, prior)
	if d := plan.Set(ctx, &prop); d.HasError() {
		t.Fatal(d)
	}
	state := tfsdk.State{Schema: sch}
	if prior != nil {
		if d := state.Set(ctx, prior); d.HasError() {
			t.Fatal(d)
		}
	} else {
		state.RemoveResource(ctx)
	}
	req := resource.ModifyPlanRequest{Config: cfg, Plan: plan, State: state}
	resp := resource.ModifyPlanResponse{Plan: plan}
	(&ncclCheck{client: c}).ModifyPlan(ctx, req, &resp)
	var out plannedCheck
	out.diags, out.replace = resp.Diagnostics, resp.RequiresReplace
	if d := resp.Plan.Get(ctx, &out.model); d.HasError() {
		t.Fatal(d)
	}
	return out
}

func warnings(d diag.Diagnostics) string {
	var parts []string
	for _, w := range d.Warnings() {
		parts = append(parts, w.Summary()+": "+w.Detail())
	}
	return strings.Join(parts, "\n")
}

func TestAccNCCLCheckReplanOnNodeJoin(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	env := testenv.Current()
	if env == nil {
		t.Fatal("TF_ACC is set but no test cluster is running")
	}
	client := func() *kube.Client { return kube.NewClientFromREST(env.RESTConfig, false) } // one node listing per "run"

	// Create: nodes, nodes_tested, the peak and the command are known at plan.
	created := modifyPlan(t, client(), configModel("535"), nil)
	if created.diags.HasError() {
		t.Fatal(created.diags)
	}
	m := created.model
	if got := listValues(m.NodesTested); strings.Join(got, ",") != "nj-0,nj-1" || m.Nodes.ValueInt64() != 2 || m.PeakBusBW.ValueFloat64() != 100 ||
		m.ID.ValueString() != "default/fabric" || !m.Verdict.IsUnknown() || len(m.Command.Elements()) == 0 {
		t.Fatalf("create plan: nodes %v tested %v peak %v id %v verdict %v command %v", m.Nodes, got, m.PeakBusBW, m.ID, m.Verdict, m.Command)
	}

	// The recorded state of a good run on those nodes.
	s, d := resolve(context.Background(), &m)
	if d.HasError() {
		t.Fatal(d)
	}
	log, err := os.ReadFile("../../fabric/testdata/published/ib_footer_nccl-tests119.log")
	if err != nil {
		t.Fatal(err)
	}
	o, err := judge(s, &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, "", kube.PodLog{Text: string(log)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	state := m
	record(&state, o)

	// Nothing changed: no replacement, no warning, the result kept.
	same := modifyPlan(t, client(), configModel("535"), &state)
	if len(same.replace) != 0 || len(same.diags) != 0 || same.model.Verdict.ValueString() != "good" || same.model.BusBW.ValueFloat64() != 95.74 {
		t.Fatalf("unchanged: replace %v diags %v verdict %v busbw %v", same.replace, same.diags, same.model.Verdict, same.model.BusBW)
	}

	// Only the timeout changes: an in-place update that keeps the result.
	longer := configModel("535")
	longer.Timeout = types.StringValue("45m")
	upd := modifyPlan(t, client(), longer, &state)
	if len(upd.replace) != 0 || len(upd.diags) != 0 || upd.model.Timeout.ValueString() != "45m" || upd.model.Verdict.ValueString() != "good" {
		t.Errorf("timeout change: replace %v diags %v timeout %v verdict %v", upd.replace, upd.diags, upd.model.Timeout, upd.model.Verdict)
	}

	// A trigger changes: replaced, with the reason.
	trig := modifyPlan(t, client(), configModel("550"), &state)
	if !trig.replace.Contains(tfpath.Root("triggers")) || !strings.Contains(warnings(trig.diags), "triggers changed") || !trig.model.Verdict.IsUnknown() {
		t.Errorf("trigger change: replace %v warnings %q", trig.replace, warnings(trig.diags))
	}

	// An input changes: replaced, naming it (the peak follows the NICs).
	faster := configModel("535")
	faster.NICGbps = types.Float64Value(400)
	in := modifyPlan(t, client(), faster, &state)
	if !in.replace.Contains(tfpath.Root("nic_gbps")) || !strings.Contains(warnings(in.diags), "inputs changed: nic_gbps.") ||
		in.model.PeakBusBW.ValueFloat64() != 200 {
		t.Errorf("input change: replace %v warnings %q peak %v", in.replace, warnings(in.diags), in.model.PeakBusBW)
	}

	// A node joins the pool: the next plan re-runs the check on all three.
	if _, err := env.AddNodes(context.Background(), testenv.NodePool{Name: "nj", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3",
		Labels: map[string]string{"testpool": "nj"}}); err != nil {
		t.Fatal(err)
	}
	joined := modifyPlan(t, client(), configModel("535"), &state) // AddNodes returned once nj-2 is Ready
	if got := listValues(joined.model.NodesTested); strings.Join(got, ",") != "nj-0,nj-1,nj-2" || !joined.replace.Contains(tfpath.Root("nodes_tested")) ||
		!strings.Contains(warnings(joined.diags), "the nodes the check would use changed (joined: nj-2)") || !joined.model.Verdict.IsUnknown() ||
		strings.Contains(warnings(joined.diags), "inputs changed") {
		t.Errorf("node joined: nodes_tested %v replace %v warnings %q", got, joined.replace, warnings(joined.diags))
	}
	if cmd := strings.Join(listValues(joined.model.Command), " "); !strings.Contains(cmd, "-np 24 ") {
		t.Errorf("command after the join: %s", cmd)
	}
}
