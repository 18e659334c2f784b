// Package gpu holds the resources and data sources about GPU nodes: pools of
// nodes labelled and tainted together, and where free GPUs are.
package gpu

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// annotationPrefix + pool name is the node annotation that records what a pool
// set on the node (selector, labels, taints), so the pool can be imported by
// name and cleaned up exactly.
const annotationPrefix = "gpu-node-pool.aiplatform.terraform.io/"

type nodePoolModel struct {
	ID          types.String   `tfsdk:"id"`
	Name        types.String   `tfsdk:"name"`
	Selector    types.Map      `tfsdk:"selector"`
	Labels      types.Map      `tfsdk:"labels"`
	Taints      []object.Taint `tfsdk:"taints"`
	GPUResource types.String   `tfsdk:"gpu_resource"`
	MinNodes    types.Int64    `tfsdk:"min_nodes"`

	NodeNames         types.List   `tfsdk:"node_names"`
	NodeCount         types.Int64  `tfsdk:"node_count"`
	PendingNodes      types.List   `tfsdk:"pending_nodes"`
	GPUProduct        types.String `tfsdk:"gpu_product"`
	GPUsPerNode       types.Int64  `tfsdk:"gpus_per_node"`
	GPUCapacity       types.Int64  `tfsdk:"gpu_capacity"`
	GPUAllocatable    types.Int64  `tfsdk:"gpu_allocatable"`
	CPUAllocatable    types.String `tfsdk:"cpu_allocatable"`
	MemoryAllocatable types.String `tfsdk:"memory_allocatable"`
}

// record is what the annotation holds.
type record struct {
	Selector    map[string]string `json:"selector"`
	Labels      map[string]string `json:"labels,omitempty"`
	Taints      []corev1.Taint    `json:"taints,omitempty"`
	GPUResource string            `json:"gpuResource,omitempty"`
	MinNodes    *int64            `json:"minNodes,omitempty"`
}

// NewNodePool is aiplatform_gpu_node_pool.
func NewNodePool() resource.Resource { return &nodePool{} }

type nodePool struct{ client *kube.Client }

var (
	_ resource.ResourceWithConfigure   = (*nodePool)(nil)
	_ resource.ResourceWithModifyPlan  = (*nodePool)(nil)
	_ resource.ResourceWithImportState = (*nodePool)(nil)
)

func (r *nodePool) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_gpu_node_pool"
}

func computedInt(desc string) schema.Int64Attribute {
	return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
}

func (r *nodePool) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A pool of GPU nodes picked by labels: the provider labels and taints every matching node " +
			"(server-side apply, so only what this pool set is owned, changed and removed) and reports what the pool " +
			"really offers — node count, GPU product, GPUs per node, capacity vs allocatable — read from the live nodes at " +
			"every plan. A node that joins shows in the plan as `pending_nodes` and gets the labels and taints on the next apply.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The pool's name; also the import ID.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the pool (a DNS label). Changing it replaces the pool.",
				Validators: []validator.String{validators.DNSLabel()}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"selector": schema.MapAttribute{ElementType: types.StringType, Required: true,
				MarkdownDescription: "Labels that pick the pool's nodes, e.g. `{ \"nvidia.com/gpu.product\" = \"NVIDIA-H100-80GB-HBM3\" }`.",
				Validators:          []validator.Map{mapvalidator.SizeAtLeast(1), validators.Labels()}},
			"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Labels applied to every node of the pool.", Validators: []validator.Map{validators.Labels()}},
			"taints": taintsAttribute(),
			"gpu_resource": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(capacity.DefaultGPUResource),
				MarkdownDescription: "Extended resource name of the GPUs. Default `nvidia.com/gpu`.", Validators: []validator.String{validators.QualifiedName()}},
			"min_nodes": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Fail the plan when fewer nodes match the selector.", Validators: []validator.Int64{int64validator.AtLeast(0)}},
			"node_names":         schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Nodes matching the selector, sorted."},
			"node_count":         computedInt("Number of nodes matching the selector."),
			"pending_nodes":      schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Matching nodes that lack the pool's labels or taints; empty after apply."},
			"gpu_product":        schema.StringAttribute{Computed: true, MarkdownDescription: "`nvidia.com/gpu.product` of the nodes; `mixed` when they differ."},
			"gpus_per_node":      computedInt("Allocatable GPUs of the smallest node."),
			"gpu_capacity":       computedInt("Sum of GPU capacity over the nodes."),
			"gpu_allocatable":    computedInt("Sum of allocatable GPUs over the Ready, uncordoned nodes: what quota can be built on."),
			"cpu_allocatable":    schema.StringAttribute{Computed: true, MarkdownDescription: "Allocatable CPU of the Ready, uncordoned nodes."},
			"memory_allocatable": schema.StringAttribute{Computed: true, MarkdownDescription: "Allocatable memory of the Ready, uncordoned nodes."},
		},
	}
}

func (r *nodePool) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*kube.Client); ok {
		r.client = c
	}
}

func (m *nodePoolModel) selector() map[string]string { return object.Labels(m.Selector) }
func (m *nodePoolModel) gpu() corev1.ResourceName {
	if m.GPUResource.IsNull() || m.GPUResource.IsUnknown() {
		return capacity.DefaultGPUResource
	}
	return corev1.ResourceName(m.GPUResource.ValueString())
}

func taintsAttribute() schema.ListNestedAttribute {
	a := object.TaintsAttribute("Taints applied to every node of the pool (other taints on the nodes are kept).")
	a.Validators = []validator.List{listvalidator.SizeAtLeast(1)}
	return a
}

func (m *nodePoolModel) desiredTaints() []corev1.Taint {
	out := make([]corev1.Taint, 0, len(m.Taints))
	for _, t := range m.Taints {
		out = append(out, corev1.Taint{Key: t.Key.ValueString(), Value: t.Value.ValueString(), Effect: corev1.TaintEffect(t.Effect.ValueString())})
	}
	return out
}

// observe sets the computed attributes from the node listing; pending lists
// the matching nodes that lack this pool's labels or taints.
func (m *nodePoolModel) observe(nodes []corev1.Node, afterApply bool) {
	p := capacity.Summarize(nodes, m.selector(), m.gpu())
	m.NodeNames = stringList(p.NodeNames)
	m.NodeCount = types.Int64Value(int64(len(p.NodeNames)))
	m.GPUProduct = types.StringValue(p.Product)
	m.GPUsPerNode = types.Int64Value(p.GPUsPerNode)
	m.GPUCapacity = types.Int64Value(p.GPUCapacity)
	m.GPUAllocatable = types.Int64Value(p.GPUAllocatable)
	m.CPUAllocatable = types.StringValue(p.CPUAllocatable.String())
	m.MemoryAllocatable = types.StringValue(p.MemoryAllocatable.String())
	pending := []string{}
	if !afterApply {
		labels, taints := object.Labels(m.Labels), m.desiredTaints()
		for _, n := range capacity.Select(nodes, m.selector()) {
			if !hasLabels(n, labels) || !hasTaints(n, taints) {
				pending = append(pending, n.Name)
			}
		}
	}
	m.PendingNodes = stringList(pending)
}

func (r *nodePool) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.client == nil {
		return
	}
	var m nodePoolModel
	if d := req.Plan.Get(ctx, &m); d.HasError() || m.Selector.IsUnknown() || m.Labels.IsUnknown() || m.GPUResource.IsUnknown() {
		return
	}
	nodes, err := r.client.Nodes(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the cluster's nodes", err.Error())
		return
	}
	m.observe(nodes, true) // after the apply, no node is pending
	if !m.MinNodes.IsNull() && !m.MinNodes.IsUnknown() && m.NodeCount.ValueInt64() < m.MinNodes.ValueInt64() {
		resp.Diagnostics.AddAttributeError(path.Root("min_nodes"), "Too few nodes in the pool",
			fmt.Sprintf("min_nodes: the selector %s matches %d nodes (%s); min_nodes is %d.",
				object.SelectorString(m.selector()), m.NodeCount.ValueInt64(), strings.Join(names(m.NodeNames), ", "), m.MinNodes.ValueInt64()))
		return
	}
	if m.ID.IsUnknown() {
		m.ID = m.Name
	}
	// The labels this pool gives its nodes, for the checks of resources
	// that select nodes by them (internal/rules), planned in the same run.
	if !m.Name.IsUnknown() {
		resp.Diagnostics.Append(rules.Plan(ctx, r.client, planned.NodePool{Name: m.Name.ValueString(), Selector: m.selector(), Labels: object.Labels(m.Labels)})...)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &m)...)
}

func (r *nodePool) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m nodePoolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.apply(ctx, &m, nil)...)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

func (r *nodePool) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior nodePoolModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.apply(ctx, &m, &prior)...)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

// apply labels and taints every matching node, and takes them off nodes that
// were in the pool before and no longer match.
func (r *nodePool) apply(ctx context.Context, m, prior *nodePoolModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if r.client == nil {
		object.NotConnected(&diags, false)
		return diags
	}
	nodes, err := r.client.Nodes(ctx)
	if err != nil {
		diags.AddError("Cannot read the cluster's nodes", err.Error())
		return diags
	}
	name := m.Name.ValueString()
	labels, taints := object.Labels(m.Labels), m.desiredTaints()
	var before []corev1.Taint
	if prior != nil {
		before = prior.desiredTaints()
	}
	r0 := record{Selector: m.selector(), Labels: labels, Taints: taints, GPUResource: string(m.gpu())}
	if !m.MinNodes.IsNull() {
		n := m.MinNodes.ValueInt64()
		r0.MinNodes = &n
	}
	rec, _ := json.Marshal(r0)
	selected := map[string]bool{}
	for _, n := range capacity.Select(nodes, m.selector()) {
		selected[n.Name] = true
		if err := r.client.ApplyNodeMetadata(ctx, n.Name, manager(name), labels, map[string]string{annotationPrefix + name: string(rec)}); err != nil {
			diags.AddError(fmt.Sprintf("Labelling node %s failed", n.Name), err.Error())
			return diags
		}
		if err := r.client.UpdateNodeTaints(ctx, n.Name, func(ts []corev1.Taint) []corev1.Taint { return mergeTaints(ts, before, taints) }); err != nil {
			diags.AddError(fmt.Sprintf("Tainting node %s failed", n.Name), err.Error())
			return diags
		}
	}
	if prior != nil {
		for _, n := range names(prior.NodeNames) {
			if !selected[n] {
				diags.Append(r.release(ctx, n, name, before)...)
			}
		}
	}
	m.observe(nodes, true)
	m.ID = m.Name
	return diags
}

// release takes this pool's labels, annotation and taints off a node.
func (r *nodePool) release(ctx context.Context, node, pool string, taints []corev1.Taint) diag.Diagnostics {
	var diags diag.Diagnostics
	if err := r.client.ApplyNodeMetadata(ctx, node, manager(pool), nil, nil); err != nil {
		diags.AddError(fmt.Sprintf("Removing the labels of pool %s from node %s failed", pool, node), err.Error())
	}
	if err := r.client.UpdateNodeTaints(ctx, node, func(ts []corev1.Taint) []corev1.Taint { return mergeTaints(ts, taints, nil) }); err != nil {
		diags.AddError(fmt.Sprintf("Removing the taints of pool %s from node %s failed", pool, node), err.Error())
	}
	return diags
}

func (r *nodePool) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m nodePoolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.client == nil {
		return
	}
	nodes, err := r.client.Nodes(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the cluster's nodes", err.Error())
		return
	}
	if m.Selector.IsNull() { // import: recover the pool from its nodes' annotation
		rec, ok := findRecord(nodes, m.Name.ValueString())
		if !ok {
			resp.Diagnostics.AddError("Pool not found", fmt.Sprintf("no node carries the annotation %s%s: the pool %q was never applied to this cluster, or it has no nodes.",
				annotationPrefix, m.Name.ValueString(), m.Name.ValueString()))
			return
		}
		m.Selector = object.StringMap(rec.Selector, types.MapNull(types.StringType))
		if len(rec.Labels) > 0 {
			m.Labels = object.StringMap(rec.Labels, types.MapNull(types.StringType))
		}
		for _, t := range rec.Taints {
			nt := object.Taint{Key: types.StringValue(t.Key), Effect: types.StringValue(string(t.Effect)), Value: types.StringNull()}
			if t.Value != "" {
				nt.Value = types.StringValue(t.Value)
			}
			m.Taints = append(m.Taints, nt)
		}
		m.GPUResource = types.StringValue(rec.GPUResource)
		if rec.MinNodes != nil {
			m.MinNodes = types.Int64Value(*rec.MinNodes)
		}
	}
	m.observe(nodes, false)
	m.ID = m.Name
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *nodePool) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m nodePoolModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.client == nil {
		return
	}
	nodes, err := r.client.Nodes(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the cluster's nodes", err.Error())
		return
	}
	seen := map[string]bool{}
	for _, n := range capacity.Select(nodes, m.selector()) {
		seen[n.Name] = true
		resp.Diagnostics.Append(r.release(ctx, n.Name, m.Name.ValueString(), m.desiredTaints())...)
	}
	for _, n := range names(m.NodeNames) {
		if !seen[n] {
			resp.Diagnostics.Append(r.release(ctx, n, m.Name.ValueString(), m.desiredTaints())...)
		}
	}
}

func (r *nodePool) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
}

// manager is the field manager of one pool's labels on nodes, so pools that
// share a node own their labels separately.
func manager(pool string) string { return kube.FieldManager + "/gpu-node-pool/" + pool }

func findRecord(nodes []corev1.Node, pool string) (record, bool) {
	for i := range nodes {
		if v, ok := nodes[i].Annotations[annotationPrefix+pool]; ok {
			var rec record
			if json.Unmarshal([]byte(v), &rec) == nil {
				return rec, true
			}
		}
	}
	return record{}, false
}

func hasLabels(n *corev1.Node, want map[string]string) bool {
	for k, v := range want {
		if n.Labels[k] != v {
			return false
		}
	}
	return true
}

func hasTaints(n *corev1.Node, want []corev1.Taint) bool {
	for _, w := range want {
		found := false
		for _, t := range n.Spec.Taints {
			if t.Key == w.Key && t.Value == w.Value && t.Effect == w.Effect {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// mergeTaints drops the taints this pool set before (same key and effect) and
// adds the ones it wants, keeping every other taint in place.
func mergeTaints(current, before, want []corev1.Taint) []corev1.Taint {
	ours := func(t corev1.Taint, set []corev1.Taint) bool {
		for _, o := range set {
			if o.Key == t.Key && o.Effect == t.Effect {
				return true
			}
		}
		return false
	}
	var out []corev1.Taint
	for _, t := range current {
		if !ours(t, before) && !ours(t, want) {
			out = append(out, t)
		}
	}
	return append(out, want...)
}

func stringList(s []string) types.List {
	v, _ := types.ListValueFrom(context.Background(), types.StringType, s)
	return v
}

func names(l types.List) []string {
	var out []string
	if l.IsNull() || l.IsUnknown() {
		return out
	}
	_ = l.ElementsAs(context.Background(), &out, false)
	return out
}
