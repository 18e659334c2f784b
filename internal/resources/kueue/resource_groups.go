package kueue

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Resource groups are the quota shape ClusterQueues and Cohorts share.

type resourceGroup struct {
	CoveredResources []types.String `tfsdk:"covered_resources"`
	Flavors          []flavorQuotas `tfsdk:"flavors"`
}

type flavorQuotas struct {
	Name      types.String    `tfsdk:"name"`
	Resources []resourceQuota `tfsdk:"resources"`
}

type resourceQuota struct {
	Name            types.String     `tfsdk:"name"`
	NominalQuota    types.String     `tfsdk:"nominal_quota"`
	FromAllocatable *fromAllocatable `tfsdk:"from_allocatable"`
	BorrowingLimit  types.String     `tfsdk:"borrowing_limit"`
	LendingLimit    types.String     `tfsdk:"lending_limit"`
}

type fromAllocatable struct {
	NodeSelector types.Map     `tfsdk:"node_selector"`
	Share        types.Float64 `tfsdk:"share"`
	Reserve      types.String  `tfsdk:"reserve"`
}

func resourceGroupsAttribute(owner string) schema.Attribute {
	unset := "Unset: the Cohort holds no quota of its own."
	if owner == "ClusterQueue" {
		unset = "Unset: the queue holds no quota of its own (a queue that only routes workloads through admission checks, or a placeholder in a cohort)."
	}
	return schema.ListNestedAttribute{
		Optional: true,
		MarkdownDescription: "Groups of resources whose quota is given together per flavor. Every flavor of a group lists " +
			"exactly the group's `covered_resources`, in the same order. " + unset,
		Validators: []validator.List{listvalidator.SizeBetween(1, 16)},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"covered_resources": schema.ListAttribute{
				ElementType: types.StringType, Required: true,
				MarkdownDescription: "Resource names, e.g. `[\"cpu\", \"memory\", \"nvidia.com/gpu\"]`.",
				Validators:          []validator.List{listvalidator.SizeBetween(1, 64), listvalidator.ValueStringsAre(validators.QualifiedName())},
			},
			"flavors": schema.ListNestedAttribute{
				Required:            true,
				MarkdownDescription: "Flavors in order of preference.",
				Validators:          []validator.List{listvalidator.SizeBetween(1, 64)},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "ResourceFlavor name.", Validators: []validator.String{validators.DNSSubdomain()}},
					"resources": schema.ListNestedAttribute{
						Required:            true,
						MarkdownDescription: "Quota of this flavor for each of the group's `covered_resources`, in the same order.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"name": schema.StringAttribute{Required: true, MarkdownDescription: "Resource name, e.g. `nvidia.com/gpu`: one of `covered_resources`, in their order (checked at plan).", Validators: []validator.String{validators.QualifiedName()}},
							"nominal_quota": schema.StringAttribute{
								Optional: true, Computed: true,
								MarkdownDescription: "Quota as a Kubernetes quantity, e.g. `\"8\"`, `\"64Gi\"`. Either this or `from_allocatable`; " +
									"with `from_allocatable` it is computed at every plan from the live nodes.",
								Validators: []validator.String{validators.Quantity()},
							},
							"from_allocatable": schema.SingleNestedAttribute{
								Optional: true,
								MarkdownDescription: "Derive `nominal_quota` from the nodes: floor(`share` × Σ allocatable of this resource over the Ready, " +
									"uncordoned nodes matching `node_selector`) − `reserve`, never below 0. Recomputed at every plan from one node " +
									"listing shared by all resources, so a node joining shows as `nominal_quota: \"16\" → \"24\"`.",
								Attributes: map[string]schema.Attribute{
									"node_selector": schema.MapAttribute{ElementType: types.StringType, Required: true,
										MarkdownDescription: "Labels of the nodes to count, e.g. the pool's `nvidia.com/gpu.product`.",
										Validators:          []validator.Map{mapvalidator.SizeAtLeast(1), validators.Labels()}},
									"share": schema.Float64Attribute{Optional: true,
										MarkdownDescription: "Fraction of the allocatable this queue gets, in (0, 1]. Default 1.",
										Validators:          []validator.Float64{float64validator.Between(0, 1), float64validator.NoneOf(0)}},
									"reserve": schema.StringAttribute{Optional: true,
										MarkdownDescription: "Quantity held back after the share (e.g. `\"1\"` GPU for system work). Default `\"0\"`.",
										Validators:          []validator.String{validators.Quantity()}},
								},
							},
							"borrowing_limit": schema.StringAttribute{Optional: true, MarkdownDescription: "Most this queue may borrow from its cohort. Needs a cohort.", Validators: []validator.String{validators.Quantity()}},
							"lending_limit":   schema.StringAttribute{Optional: true, MarkdownDescription: "Most of the nominal quota other members of the cohort may borrow. At most `nominal_quota`.", Validators: []validator.String{validators.Quantity()}},
						}},
					},
				}},
			},
		}},
	}
}

func resourceGroupsOut(groups []resourceGroup) []any {
	out := make([]any, len(groups))
	for i, g := range groups {
		flavors := make([]any, len(g.Flavors))
		for j, f := range g.Flavors {
			resources := make([]any, len(f.Resources))
			for k, r := range f.Resources {
				rm := map[string]any{}
				object.Put(rm, "name", r.Name)
				object.Put(rm, "nominalQuota", r.NominalQuota)
				object.Put(rm, "borrowingLimit", r.BorrowingLimit)
				object.Put(rm, "lendingLimit", r.LendingLimit)
				resources[k] = rm
			}
			flavors[j] = map[string]any{"name": f.Name.ValueString(), "resources": resources}
		}
		out[i] = map[string]any{"coveredResources": object.ListOut(g.CoveredResources), "flavors": flavors}
	}
	return out
}

// resourceGroupsIn reads resource groups back; from_allocatable is not part of
// the object and is kept from the prior value.
func resourceGroupsIn(live []map[string]any, prior []resourceGroup) []resourceGroup {
	before := map[[2]string]resourceQuota{}
	for _, g := range prior {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				before[[2]string{f.Name.ValueString(), r.Name.ValueString()}] = r
			}
		}
	}
	var groups []resourceGroup
	for i, g := range live {
		var pg resourceGroup
		if i < len(prior) {
			pg = prior[i]
		}
		rg := resourceGroup{CoveredResources: object.StringList(g["coveredResources"], pg.CoveredResources)}
		for _, f := range object.Items(g, "flavors") {
			fq := flavorQuotas{Name: object.String(f["name"], types.StringNull())}
			for _, r := range object.Items(f, "resources") {
				name := object.String(r["name"], types.StringNull())
				p := before[[2]string{fq.Name.ValueString(), name.ValueString()}]
				fq.Resources = append(fq.Resources, resourceQuota{
					Name:            name,
					NominalQuota:    object.Quantity(r["nominalQuota"], p.NominalQuota),
					FromAllocatable: p.FromAllocatable,
					BorrowingLimit:  object.Quantity(r["borrowingLimit"], p.BorrowingLimit),
					LendingLimit:    object.Quantity(r["lendingLimit"], p.LendingLimit),
				})
			}
			rg.Flavors = append(rg.Flavors, fq)
		}
		groups = append(groups, rg)
	}
	if groups == nil {
		return object.EmptyOrNil(prior)
	}
	return groups
}

// validateResourceGroups checks at plan time what Kueue's CRD and webhook
// would reject at apply time, with the attribute path of the offending value.
func validateResourceGroups(groups []resourceGroup, hasCohort bool) diag.Diagnostics {
	var diags diag.Diagnostics
	seenResource := map[string]int{} // resource → index of the group covering it
	seenFlavor := map[string]bool{}
	for i, g := range groups {
		gp := path.Root("resource_groups").AtListIndex(i)
		for j, r := range g.CoveredResources {
			if r.IsUnknown() {
				continue
			}
			rp := gp.AtName("covered_resources").AtListIndex(j)
			if prev, dup := seenResource[r.ValueString()]; dup && prev == i {
				diags.AddAttributeError(rp, "Duplicate covered resource",
					fmt.Sprintf("%q is listed twice in this resource group.", r.ValueString()))
			} else if dup {
				diags.AddAttributeError(rp, "Resource in two resource groups",
					fmt.Sprintf("%q is already covered by resource_groups[%d]; a resource belongs to one group.", r.ValueString(), prev))
			}
			seenResource[r.ValueString()] = i
		}
		for j, f := range g.Flavors {
			fp := gp.AtName("flavors").AtListIndex(j)
			if seenFlavor[f.Name.ValueString()] && !f.Name.IsUnknown() {
				diags.AddAttributeError(fp.AtName("name"), "Duplicate flavor",
					fmt.Sprintf("flavor %q appears more than once; a flavor may appear once per queue.", f.Name.ValueString()))
			}
			seenFlavor[f.Name.ValueString()] = true
			diags.Append(validateFlavorResources(fp, g.CoveredResources, f.Resources, hasCohort)...)
		}
	}
	return diags
}

func validateFlavorResources(fp path.Path, covered []types.String, rs []resourceQuota, hasCohort bool) diag.Diagnostics {
	var diags diag.Diagnostics
	rp := fp.AtName("resources")
	if len(rs) != len(covered) {
		diags.AddAttributeError(rp, "Resources do not match covered_resources",
			fmt.Sprintf("this flavor gives quota for %d resources but the group covers %d (%s); list each covered resource once, in the same order.",
				len(rs), len(covered), names(covered)))
	}
	for k, r := range rs {
		ip := rp.AtListIndex(k)
		if k < len(covered) && !r.Name.IsUnknown() && !covered[k].IsUnknown() && r.Name.ValueString() != covered[k].ValueString() {
			diags.AddAttributeError(ip.AtName("name"), "Resource not in covered_resources order",
				fmt.Sprintf("resource %d is %q but covered_resources[%d] is %q; Kueue requires the same resources in the same order (%s).",
					k, r.Name.ValueString(), k, covered[k].ValueString(), names(covered)))
		}
		switch {
		case r.FromAllocatable != nil && !r.NominalQuota.IsNull() && !r.NominalQuota.IsUnknown():
			diags.AddAttributeError(ip.AtName("from_allocatable"), "Both nominal_quota and from_allocatable",
				"set either a fixed nominal_quota or from_allocatable to derive it from the nodes, not both.")
		case r.FromAllocatable == nil && r.NominalQuota.IsNull():
			diags.AddAttributeError(ip.AtName("nominal_quota"), "No quota",
				"set nominal_quota, or from_allocatable to derive it from the nodes.")
		}
		if !r.BorrowingLimit.IsNull() && !hasCohort {
			diags.AddAttributeError(ip.AtName("borrowing_limit"), "borrowing_limit without cohort",
				"a queue can only borrow from a cohort: set the cohort or remove borrowing_limit.")
		}
		if nominal, lending, ok := quantities(r.NominalQuota, r.LendingLimit); ok && lending.Cmp(nominal) > 0 {
			diags.AddAttributeError(ip.AtName("lending_limit"), "lending_limit above nominal_quota",
				fmt.Sprintf("lending_limit %s is more than nominal_quota %s; a queue cannot lend more than it has.", lending.String(), nominal.String()))
		}
	}
	return diags
}

// planQuotas computes every from_allocatable quota of the plan from the live
// nodes (one listing per provider run), and warns where a fixed quota is more
// than the nodes of its flavor can hold.
func planQuotas(ctx context.Context, c *kube.Client, groups []resourceGroup) diag.Diagnostics {
	var diags diag.Diagnostics
	if c == nil {
		return diags
	}
	listed := false
	list := func() bool {
		if !listed {
			if _, err := c.Nodes(ctx); err != nil {
				diags.AddError("Cannot read the cluster's nodes", err.Error())
				return false
			}
			listed = true
		}
		return true
	}
	// matching is served from the client's per-run cache once listed, with
	// the labels this run's node pools give their nodes (internal/rules), so
	// a quota derived from a pool's labels is the pool's on the first apply
	// too, not 0.
	matching := func(selector map[string]string) []*corev1.Node {
		sel, _ := rules.NodesMatching(ctx, c, selector)
		return sel
	}
	for i, g := range groups {
		for j, f := range g.Flavors {
			for k, r := range f.Resources {
				p := path.Root("resource_groups").AtListIndex(i).AtName("flavors").AtListIndex(j).AtName("resources").AtListIndex(k)
				if r.Name.IsUnknown() {
					continue
				}
				if fa := r.FromAllocatable; fa != nil {
					if fa.NodeSelector.IsUnknown() || fa.Share.IsUnknown() || fa.Reserve.IsUnknown() || !list() {
						continue
					}
					q, d := derive(matching, r.Name.ValueString(), fa, p)
					diags.Append(d...)
					if !d.HasError() {
						groups[i].Flavors[j].Resources[k].NominalQuota = types.StringValue(capacity.Format(q))
					}
					continue
				}
				if f.Name.IsUnknown() || r.NominalQuota.IsUnknown() || r.NominalQuota.IsNull() || !list() {
					continue
				}
				diags.Append(warnOverAllocatable(ctx, c, matching, f.Name.ValueString(), r, p)...)
			}
		}
	}
	return diags
}

func derive(matching func(map[string]string) []*corev1.Node, name string, fa *fromAllocatable, p path.Path) (resource.Quantity, diag.Diagnostics) {
	var diags diag.Diagnostics
	selector := object.Labels(fa.NodeSelector)
	share := 1.0
	if !fa.Share.IsNull() {
		share = fa.Share.ValueFloat64()
	}
	reserve := resource.Quantity{}
	if !fa.Reserve.IsNull() {
		var err error
		if reserve, err = validators.ParseQuantity(fa.Reserve.ValueString()); err != nil {
			return reserve, diags // the attribute validator reports it
		}
	}
	sel := matching(selector)
	total := capacity.Allocatable(sel, corev1.ResourceName(name))
	if reserve.Cmp(total) > 0 {
		diags.AddAttributeError(p.AtName("from_allocatable").AtName("reserve"), "Reserve larger than allocatable",
			fmt.Sprintf("%s: reserve %s is more than the %s of %s allocatable on the %d Ready nodes matching %s.",
				p.AtName("from_allocatable").AtName("reserve"), reserve.String(), total.String(), name, countReady(sel), object.SelectorString(selector)))
		return reserve, diags
	}
	return capacity.DerivedQuota(total, share, reserve), diags
}

// warnOverAllocatable warns when a fixed quota exceeds the allocatable of the
// nodes the flavor selects: Kueue accepts it and admitted pods stay Pending.
func warnOverAllocatable(ctx context.Context, c *kube.Client, matching func(map[string]string) []*corev1.Node, flavor string, r resourceQuota, p path.Path) diag.Diagnostics {
	var diags diag.Diagnostics
	nominal, err := validators.ParseQuantity(r.NominalQuota.ValueString())
	if err != nil {
		return diags
	}
	labels, ok := flavorNodeLabels(ctx, c, flavor)
	if !ok {
		return diags // the flavor is not there yet (or unreadable): nothing to compare with
	}
	sel := matching(labels)
	total := capacity.Allocatable(sel, corev1.ResourceName(r.Name.ValueString()))
	if nominal.Cmp(total) > 0 {
		diags.AddAttributeWarning(p.AtName("nominal_quota"), "Quota larger than the nodes",
			fmt.Sprintf("%s: nominal_quota %s of %s in flavor %q is more than the %s allocatable on the %d Ready nodes matching the flavor's node_labels %s. "+
				"Kueue will admit workloads up to the quota and their pods will stay Pending. Use from_allocatable to follow the nodes.",
				p.AtName("nominal_quota"), nominal.String(), r.Name.ValueString(), flavor, total.String(), countReady(sel), object.SelectorString(labels)))
	}
	return diags
}

func flavorNodeLabels(ctx context.Context, c *kube.Client, flavor string) (map[string]string, bool) {
	obj, found, err := c.Get(ctx, resourceFlavorKind, kube.Ref{Name: flavor})
	if err != nil || !found {
		return nil, false
	}
	out := map[string]string{}
	for k, v := range object.Fields(obj.Object, "spec", "nodeLabels") {
		out[k] = fmt.Sprint(v)
	}
	return out, true
}

func countReady(nodes []*corev1.Node) int {
	n := 0
	for _, node := range nodes {
		if capacity.Ready(node) && capacity.Schedulable(node) {
			n++
		}
	}
	return n
}

// Fair sharing is the other shape ClusterQueues and Cohorts share.

type fairSharing struct {
	Weight types.String `tfsdk:"weight"`
}

func fairSharingAttribute(desc string) schema.Attribute {
	return schema.SingleNestedAttribute{
		Optional:            true,
		MarkdownDescription: desc,
		Attributes: map[string]schema.Attribute{
			"weight": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("1"),
				MarkdownDescription: "Share of unused quota relative to the other members, a quantity. Default `\"1\"`.",
				Validators:          []validator.String{validators.Quantity()}},
		},
	}
}

func fairSharingOut(spec map[string]any, f *fairSharing) {
	if f == nil {
		return
	}
	fm := map[string]any{}
	object.Put(fm, "weight", f.Weight)
	spec["fairSharing"] = fm
}

func fairSharingIn(spec map[string]any, prior *fairSharing) *fairSharing {
	fm := object.Fields(spec, "fairSharing")
	if fm == nil {
		return nil
	}
	p := types.StringNull()
	if prior != nil {
		p = prior.Weight
	}
	return &fairSharing{Weight: object.Quantity(fm["weight"], p)}
}
