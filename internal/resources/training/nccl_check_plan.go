package training

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/fabric"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
)

var reEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validate checks the configuration across attributes without I/O; unknown
// values are skipped (Terraform validates again at apply with every value
// known). With planned set, m is a plan, whose peak_busbw_gbps may have been
// computed from the NICs: which of the two was given is not checked then.
func validate(m *checkModel, planned bool) diag.Diagnostics {
	var diags diag.Diagnostics
	bad := func(p string, summary, format string, a ...any) {
		diags.AddAttributeError(tfpath.Root(p), summary, p+": "+fmt.Sprintf(format, a...))
	}
	nicsGiven := !m.NICsPerNode.IsNull() || !m.NICGbps.IsNull()
	switch {
	case planned:
	case nicsGiven && !m.PeakBusBW.IsNull() && !m.PeakBusBW.IsUnknown():
		bad("peak_busbw_gbps", "Conflicting peak", "give either peak_busbw_gbps or nics_per_node and nic_gbps, not both")
	case !nicsGiven && m.PeakBusBW.IsNull():
		bad("nics_per_node", "Missing peak", "the verdict needs the fabric's peak: give nics_per_node and nic_gbps (peak = NICs × Gb/s ÷ 8), or peak_busbw_gbps")
	case m.NICsPerNode.IsNull() && !m.NICGbps.IsNull():
		bad("nics_per_node", "Missing NIC count", "nic_gbps needs nics_per_node (the NICs per node that carry GPU traffic)")
	case !m.NICsPerNode.IsNull() && m.NICGbps.IsNull():
		bad("nic_gbps", "Missing NIC speed", "nics_per_node needs nic_gbps (each NIC's port speed in Gb/s, e.g. 400)")
	}
	good, acc := m.GoodRatio, m.AcceptableRatio
	for name, v := range map[string]types.Float64{"good_ratio": good, "acceptable_ratio": acc} {
		if object.Known(v) && (v.ValueFloat64() <= 0 || v.ValueFloat64() > 1) {
			bad(name, "Ratio out of range", "must be in (0, 1], not %g", v.ValueFloat64())
		}
	}
	if object.Known(good) && object.Known(acc) && acc.ValueFloat64() > good.ValueFloat64() {
		bad("acceptable_ratio", "Ratios out of order", "acceptable_ratio (%g) must not exceed good_ratio (%g)", acc.ValueFloat64(), good.ValueFloat64())
	}
	if object.Known(m.FailOn) {
		if _, err := fabric.ParseFailOn(m.FailOn.ValueString()); err != nil {
			bad("fail_on", "Unknown fail_on", "%v", err)
		}
	}
	if object.Known(m.Binary) {
		if err := (fabric.Test{Binary: m.Binary.ValueString()}).Validate(); err != nil {
			bad("binary", "Unknown collective", "%v", err)
		}
	}
	if object.Known(m.BinaryDir) && !strings.HasPrefix(m.BinaryDir.ValueString(), "/") {
		bad("binary_dir", "Relative path", "%q must be an absolute path", m.BinaryDir.ValueString())
	}
	var lo, hi int64 = -1, -1
	for name, v := range map[string]types.String{"min_bytes": m.MinBytes, "max_bytes": m.MaxBytes} {
		if !object.Known(v) {
			continue
		}
		n, err := fabric.ParseSize(v.ValueString())
		switch {
		case err != nil:
			bad(name, "Invalid size", "%v", err)
		case n < 1:
			bad(name, "Invalid size", "must be at least 1 byte")
		case name == "min_bytes":
			lo = n
		default:
			hi = n
		}
	}
	if lo > 0 && hi > 0 && lo > hi {
		bad("min_bytes", "Size range out of order", "min_bytes %s is larger than max_bytes %s", m.MinBytes.ValueString(), m.MaxBytes.ValueString())
	}
	if object.Known(m.Env) {
		for k := range m.Env.Elements() {
			if !reEnvName.MatchString(k) {
				diags.AddAttributeError(tfpath.Root("env").AtMapKey(k), "Invalid environment variable name",
					fmt.Sprintf("env[%q]: a name is letters, digits and _, not starting with a digit", k))
			}
		}
	}
	if object.Known(m.RDMAResources) {
		for k, v := range m.RDMAResources.Elements() {
			n, ok := v.(types.Int64)
			if ok && object.Known(n) && n.ValueInt64() < 1 {
				diags.AddAttributeError(tfpath.Root("rdma_resources").AtMapKey(k), "Invalid RDMA request",
					fmt.Sprintf("rdma_resources[%q]: must be at least 1, not %d", k, n.ValueInt64()))
			}
		}
	}
	if object.Known(m.Timeout) {
		if _, err := parseTimeout(m.Timeout.ValueString()); err != nil {
			bad("timeout", "Invalid timeout", "%v", err)
		}
	}
	if object.Known(m.Command) && len(m.Command.Elements()) == 0 {
		bad("command", "Empty command", "remove command for the default mpirun line")
	}
	return diags
}

func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as \"30m\": %v", s, err)
	}
	if d < time.Minute || d > 24*time.Hour {
		return 0, fmt.Errorf("%q: a check's timeout is between 1m and 24h", s)
	}
	return d, nil
}

func (r *ncclCheck) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m checkModel
	if d := req.Config.Get(ctx, &m); d.HasError() {
		return
	}
	resp.Diagnostics.Append(validate(&m, false)...)
}

// poolNodes are the nodes a check would use now: the Ready, schedulable
// nodes of the selector that can hold gpus GPUs, sorted by name.
func poolNodes(matching []*corev1.Node, gpu corev1.ResourceName, gpus int64) (usable []string, all int, small []string) {
	for _, n := range matching {
		if !capacity.Ready(n) || !capacity.Schedulable(n) {
			continue
		}
		all++
		q := n.Status.Allocatable[gpu]
		if q.Value() < gpus {
			small = append(small, fmt.Sprintf("%s (%d)", n.Name, q.Value()))
			continue
		}
		usable = append(usable, n.Name)
	}
	sort.Strings(usable)
	return usable, all, small
}

// inputs are the attributes whose change re-runs the check.
var inputs = []string{
	"namespace", "name", "node_selector", "tolerations", "nodes", "gpus_per_node", "gpu_resource", "image", "command",
	"worker_command", "binary", "binary_dir", "min_bytes", "max_bytes", "step_factor", "iterations", "warmup_iterations",
	"env", "host_network", "rdma_resources", "queue_name", "nics_per_node", "nic_gbps", "peak_busbw_gbps",
	"good_ratio", "acceptable_ratio", "fail_on",
}

// derived inputs are computed at plan when not configured: nodes from the
// pool, command from the test, peak from the NICs.
var derived = map[string]bool{"nodes": true, "command": true, "peak_busbw_gbps": true}

func (r *ncclCheck) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan, config checkModel
	if d := req.Plan.Get(ctx, &plan); d.HasError() {
		return
	}
	if d := req.Config.Get(ctx, &config); d.HasError() {
		return
	}
	var state *checkModel
	if !req.State.Raw.IsNull() {
		state = &checkModel{}
		if d := req.State.Get(ctx, state); d.HasError() {
			resp.Diagnostics.Append(d...)
			return
		}
	}
	if object.Known(plan.Namespace) && object.Known(plan.Name) {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.Name.ValueString())
	}
	if config.PeakBusBW.IsNull() {
		plan.PeakBusBW = types.Float64Unknown()
		if object.Known(plan.NICsPerNode) && object.Known(plan.NICGbps) {
			if peak, err := fabric.PeakBusBW(plan.NICsPerNode.ValueInt64(), plan.NICGbps.ValueFloat64()); err == nil {
				plan.PeakBusBW = types.Float64Value(peak)
			}
		}
	}
	resp.Diagnostics.Append(r.planNodes(ctx, &plan, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if config.Command.IsNull() {
		plan.Command = types.ListUnknown(types.StringType)
		if cmd, ok := defaultCommand(ctx, &plan); ok {
			plan.Command = stringListValue(cmd)
		}
	}

	var reasons []string
	if state != nil {
		var changed []string
		for _, name := range inputs {
			p, s := attrOf(&plan, name), attrOf(state, name)
			if sameInput(p, s) {
				continue
			}
			resp.RequiresReplace = append(resp.RequiresReplace, tfpath.Root(name))
			if derived[name] && attrOf(&config, name).IsNull() {
				continue // follows the pool or other inputs: their change is the reason
			}
			changed = append(changed, name)
		}
		if len(changed) > 0 {
			reasons = append(reasons, "inputs changed: "+strings.Join(changed, ", "))
		}
		if !plan.Triggers.Equal(state.Triggers) {
			reasons = append(reasons, "triggers changed")
			resp.RequiresReplace = append(resp.RequiresReplace, tfpath.Root("triggers"))
		}
		if plan.NodesTested.IsUnknown() || !plan.NodesTested.Equal(state.NodesTested) {
			reasons = append(reasons, nodeChange(state.NodesTested, plan.NodesTested))
			resp.RequiresReplace = append(resp.RequiresReplace, tfpath.Root("nodes_tested"))
		}
		if len(reasons) == 0 && len(resp.RequiresReplace) > 0 {
			reasons = append(reasons, "computed inputs changed: "+resp.RequiresReplace.String())
		}
	}
	if state != nil && len(reasons) == 0 {
		keepResult(&plan, state)
	} else {
		unknownResult(&plan)
	}
	if len(reasons) > 0 {
		resp.Diagnostics.AddWarning(fmt.Sprintf("NCCL check %s runs again", plan.ID.ValueString()),
			"The check is replaced, so nccl-tests runs again on the next apply: "+strings.Join(reasons, "; ")+".")
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// planNodes computes nodes (when not given) and nodes_tested from the
// cached node listing, and refuses a check the pool cannot hold.
func (r *ncclCheck) planNodes(ctx context.Context, plan, config *checkModel) diag.Diagnostics {
	var diags diag.Diagnostics
	plan.NodesTested = types.ListUnknown(types.StringType)
	if config.Nodes.IsNull() {
		plan.Nodes = types.Int64Unknown()
	}
	if r.client == nil || !object.Known(plan.NodeSelector) || !object.Known(plan.GPUsPerNode) || !object.Known(plan.GPUResource) {
		return diags
	}
	// The nodes as this run's node pools label them: a selector naming a
	// pool's labels picks the pool's nodes on the first apply too.
	selector := object.Labels(plan.NodeSelector)
	matching, err := rules.NodesMatching(ctx, r.client, selector)
	if err != nil {
		diags.AddError("Cannot read the cluster's nodes", err.Error())
		return diags
	}
	gpus := plan.GPUsPerNode.ValueInt64()
	usable, all, small := poolNodes(matching, corev1.ResourceName(plan.GPUResource.ValueString()), gpus)
	if len(usable) == 0 {
		p := tfpath.Root("node_selector")
		detail := fmt.Sprintf("node_selector: no Ready, schedulable node matches %s, and no aiplatform_gpu_node_pool planned before this check "+
			"gives nodes those labels, so the check has nowhere to run. If a pool of this configuration labels them, reference it "+
			"(node_selector = aiplatform_gpu_node_pool.<name>.labels) so that it is planned first.", object.SelectorString(selector))
		if len(small) > 0 {
			p = tfpath.Root("gpus_per_node")
			detail = fmt.Sprintf("gpus_per_node: each worker asks for %d GPUs, but the %d Ready nodes matching %s have fewer allocatable: %s.",
				gpus, all, object.SelectorString(selector), strings.Join(small, ", "))
		}
		diags.AddAttributeError(p, "No node can run the check", detail)
		return diags
	}
	want := int64(len(usable))
	if object.Known(config.Nodes) {
		want = config.Nodes.ValueInt64()
		if want > int64(len(usable)) {
			detail := fmt.Sprintf("nodes: the check asks for %d nodes, but only %d Ready, schedulable nodes matching %s can hold %d GPUs (%s)",
				want, len(usable), object.SelectorString(selector), gpus, strings.Join(usable, ", "))
			if len(small) > 0 {
				detail += "; too small: " + strings.Join(small, ", ")
			}
			diags.AddAttributeError(tfpath.Root("nodes"), "More nodes than the pool has", detail+".")
			return diags
		}
	}
	if want == 1 {
		diags.AddAttributeWarning(tfpath.Root("nodes"), "A one-node check does not test the fabric",
			"nodes: with one node NCCL uses only intra-node paths (NVLink, PCIe, shared memory); the network is not crossed.")
	}
	plan.Nodes = types.Int64Value(want)
	plan.NodesTested = stringListValue(usable[:want])
	return diags
}

func nodeChange(before, after types.List) string {
	if after.IsUnknown() {
		return "the pool's nodes are not known until apply"
	}
	was, now := map[string]bool{}, map[string]bool{}
	for _, n := range listValues(before) {
		was[n] = true
	}
	for _, n := range listValues(after) {
		now[n] = true
	}
	var joined, left []string
	for n := range now {
		if !was[n] {
			joined = append(joined, n)
		}
	}
	for n := range was {
		if !now[n] {
			left = append(left, n)
		}
	}
	sort.Strings(joined)
	sort.Strings(left)
	var parts []string
	if len(joined) > 0 {
		parts = append(parts, "joined: "+strings.Join(joined, ", "))
	}
	if len(left) > 0 {
		parts = append(parts, "left or not Ready: "+strings.Join(left, ", "))
	}
	return "the nodes the check would use changed (" + strings.Join(parts, "; ") + ")"
}

func listValues(l types.List) []string {
	var out []string
	if !object.Known(l) {
		return out
	}
	for _, e := range l.Elements() {
		if s, ok := e.(types.String); ok {
			out = append(out, s.ValueString())
		}
	}
	return out
}

// attrOf returns an input attribute of m by name.
// sameInput reports whether a planned input equals the recorded one. Floats
// compare as float64: a default (0.9) is a big.Float of another precision
// than the same number read back from state, and Float64.Equal would call
// them different and re-run the check on every plan.
func sameInput(p, s attr.Value) bool {
	pf, ok1 := p.(types.Float64)
	sf, ok2 := s.(types.Float64)
	if ok1 && ok2 && object.Known(pf) && object.Known(sf) {
		return pf.ValueFloat64() == sf.ValueFloat64()
	}
	return p.Equal(s)
}

func attrOf(m *checkModel, name string) attr.Value {
	switch name {
	case "namespace":
		return m.Namespace
	case "name":
		return m.Name
	case "node_selector":
		return m.NodeSelector
	case "tolerations":
		return m.Tolerations
	case "nodes":
		return m.Nodes
	case "gpus_per_node":
		return m.GPUsPerNode
	case "gpu_resource":
		return m.GPUResource
	case "image":
		return m.Image
	case "command":
		return m.Command
	case "worker_command":
		return m.WorkerCommand
	case "binary":
		return m.Binary
	case "binary_dir":
		return m.BinaryDir
	case "min_bytes":
		return m.MinBytes
	case "max_bytes":
		return m.MaxBytes
	case "step_factor":
		return m.StepFactor
	case "iterations":
		return m.Iterations
	case "warmup_iterations":
		return m.Warmup
	case "env":
		return m.Env
	case "host_network":
		return m.HostNetwork
	case "rdma_resources":
		return m.RDMAResources
	case "queue_name":
		return m.QueueName
	case "nics_per_node":
		return m.NICsPerNode
	case "nic_gbps":
		return m.NICGbps
	case "peak_busbw_gbps":
		return m.PeakBusBW
	case "good_ratio":
		return m.GoodRatio
	case "acceptable_ratio":
		return m.AcceptableRatio
	case "fail_on":
		return m.FailOn
	}
	panic("attrOf: unknown input " + name)
}

// keepResult copies the recorded result of prior into m.
func keepResult(m, prior *checkModel) {
	m.BusBW, m.BusBWAtBytes, m.AvgBusBW, m.Ratio = prior.BusBW, prior.BusBWAtBytes, prior.AvgBusBW, prior.Ratio
	m.Verdict, m.OutOfBounds, m.Transport, m.NCCLVersion = prior.Verdict, prior.OutOfBounds, prior.Transport, prior.NCCLVersion
	m.Results, m.NodesTested, m.RanAt = prior.Results, prior.NodesTested, prior.RanAt
}

func unknownResult(m *checkModel) {
	m.BusBW, m.AvgBusBW, m.Ratio = types.Float64Unknown(), types.Float64Unknown(), types.Float64Unknown()
	m.BusBWAtBytes, m.OutOfBounds = types.Int64Unknown(), types.Int64Unknown()
	m.Verdict, m.Transport, m.NCCLVersion, m.RanAt = types.StringUnknown(), types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
	m.Results = types.ListUnknown(types.ObjectType{AttrTypes: rowTypes})
}

// spec is a fully known check.
type spec struct {
	Ref           kube.Ref
	Selector      map[string]string
	Tolerations   []corev1.Toleration
	NodeNames     []string
	GPUsPerNode   int64
	GPUResource   corev1.ResourceName
	Image         string
	Command       []string
	WorkerCommand []string
	HostNetwork   bool
	RDMA          map[string]int64
	Queue         string
	Timeout       time.Duration
	Cleanup       time.Duration // removing the MPIJob after the run (timeouts.delete)
	Input         fabric.Input
}

func testOf(m *checkModel) fabric.Test {
	return fabric.Test{
		Binary: m.Binary.ValueString(), BinaryDir: m.BinaryDir.ValueString(),
		MinBytes: m.MinBytes.ValueString(), MaxBytes: m.MaxBytes.ValueString(),
		StepFactor: m.StepFactor.ValueInt64(), Iters: m.Iterations.ValueInt64(), Warmup: m.Warmup.ValueInt64(),
	}
}

func envOf(m *checkModel) map[string]string {
	if !object.Known(m.Env) {
		return nil
	}
	return object.Labels(m.Env)
}

// defaultCommand is the mpirun line for a plan whose sizes are known.
func defaultCommand(_ context.Context, m *checkModel) ([]string, bool) {
	for _, v := range []attr.Value{m.Nodes, m.GPUsPerNode, m.Binary, m.BinaryDir, m.MinBytes, m.MaxBytes, m.StepFactor, m.Iterations, m.Warmup, m.Env} {
		if v.IsUnknown() {
			return nil, false
		}
	}
	args, err := fabric.MPIRunArgs(fabric.Launch{Nodes: m.Nodes.ValueInt64(), GPUsPerNode: m.GPUsPerNode.ValueInt64(), Env: envOf(m)}, testOf(m))
	if err != nil {
		return nil, false
	}
	return args, true
}

// settle computes at apply whatever the plan left unknown: the nodes, the
// command and the peak. Terraform plans again at apply with every input
// known, so ModifyPlan has usually done it; this covers a plan made while
// the provider had no cluster configuration.
func (r *ncclCheck) settle(ctx context.Context, m *checkModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !object.Known(m.NodesTested) {
		config := *m
		if m.Nodes.IsUnknown() {
			config.Nodes = types.Int64Null()
		}
		diags.Append(r.planNodes(ctx, m, &config)...)
	}
	if m.Command.IsUnknown() {
		if cmd, ok := defaultCommand(ctx, m); ok {
			m.Command = stringListValue(cmd)
		}
	}
	if m.PeakBusBW.IsUnknown() && object.Known(m.NICsPerNode) && object.Known(m.NICGbps) {
		if peak, err := fabric.PeakBusBW(m.NICsPerNode.ValueInt64(), m.NICGbps.ValueFloat64()); err == nil {
			m.PeakBusBW = types.Float64Value(peak)
		}
	}
	if m.ID.IsUnknown() {
		m.ID = types.StringValue(m.Namespace.ValueString() + "/" + m.Name.ValueString())
	}
	return diags
}

// resolve turns a planned model (every input known at apply) into a spec.
func resolve(ctx context.Context, m *checkModel) (*spec, diag.Diagnostics) {
	diags := validate(m, true)
	if diags.HasError() {
		return nil, diags
	}
	s := &spec{
		Ref:           kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()},
		Selector:      object.Labels(m.NodeSelector),
		NodeNames:     listValues(m.NodesTested),
		GPUsPerNode:   m.GPUsPerNode.ValueInt64(),
		GPUResource:   corev1.ResourceName(m.GPUResource.ValueString()),
		Image:         m.Image.ValueString(),
		Command:       listValues(m.Command),
		WorkerCommand: listValues(m.WorkerCommand),
		HostNetwork:   m.HostNetwork.ValueBool(),
		Queue:         m.QueueName.ValueString(),
	}
	s.Timeout, _ = parseTimeout(m.Timeout.ValueString())
	s.Cleanup, _ = object.TimeoutFor(ctx, m.Timeouts, "delete", DefaultCleanupTimeout)
	if object.Known(m.Tolerations) {
		var ts []tolerationModel
		diags.Append(m.Tolerations.ElementsAs(ctx, &ts, false)...)
		for _, t := range ts {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: t.Key.ValueString(), Operator: corev1.TolerationOperator(t.Operator.ValueString()),
				Value: t.Value.ValueString(), Effect: corev1.TaintEffect(t.Effect.ValueString())})
		}
	}
	if object.Known(m.RDMAResources) {
		s.RDMA = map[string]int64{}
		for k, v := range m.RDMAResources.Elements() {
			if n, ok := v.(types.Int64); ok {
				s.RDMA[k] = n.ValueInt64()
			}
		}
	}
	if len(s.Command) == 0 {
		cmd, ok := defaultCommand(ctx, m)
		if !ok {
			diags.AddError("Cannot build the launcher command", "nodes, gpus_per_node and the test's sizes must be known at apply")
			return nil, diags
		}
		s.Command = cmd
	}
	if int64(len(s.NodeNames)) != m.Nodes.ValueInt64() || len(s.NodeNames) == 0 {
		diags.AddError("Nodes of the check not known",
			fmt.Sprintf("nodes_tested (%d nodes) does not match nodes (%d): the pool's nodes could not be read at plan", len(s.NodeNames), m.Nodes.ValueInt64()))
		return nil, diags
	}
	failOn, _ := fabric.ParseFailOn(m.FailOn.ValueString())
	s.Input = fabric.Input{
		PeakGBps:    m.PeakBusBW.ValueFloat64(),
		NICsPerNode: m.NICsPerNode.ValueInt64(),
		Thresholds:  fabric.Thresholds{Good: m.GoodRatio.ValueFloat64(), Acceptable: m.AcceptableRatio.ValueFloat64()},
		FailOn:      failOn,
	}
	return s, diags
}
