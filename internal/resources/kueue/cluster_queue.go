package kueue

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type clusterQueueModel struct {
	object.ClusterMeta
	Cohort            types.String    `tfsdk:"cohort"`
	QueueingStrategy  types.String    `tfsdk:"queueing_strategy"`
	StopPolicy        types.String    `tfsdk:"stop_policy"`
	NamespaceSelector *labelSelector  `tfsdk:"namespace_selector"`
	ResourceGroups    []resourceGroup `tfsdk:"resource_groups"`
}

type labelSelector struct {
	MatchLabels      types.Map             `tfsdk:"match_labels"`
	MatchExpressions []selectorRequirement `tfsdk:"match_expressions"`
}

type selectorRequirement struct {
	Key      types.String   `tfsdk:"key"`
	Operator types.String   `tfsdk:"operator"`
	Values   []types.String `tfsdk:"values"`
}

type resourceGroup struct {
	CoveredResources []types.String `tfsdk:"covered_resources"`
	Flavors          []flavorQuotas `tfsdk:"flavors"`
}

type flavorQuotas struct {
	Name      types.String    `tfsdk:"name"`
	Resources []resourceQuota `tfsdk:"resources"`
}

type resourceQuota struct {
	Name           types.String `tfsdk:"name"`
	NominalQuota   types.String `tfsdk:"nominal_quota"`
	BorrowingLimit types.String `tfsdk:"borrowing_limit"`
	LendingLimit   types.String `tfsdk:"lending_limit"`
}

// NewClusterQueue is aiplatform_cluster_queue.
func NewClusterQueue() resource.Resource {
	return object.New[clusterQueueModel](object.Spec[clusterQueueModel]{
		TypeName: "cluster_queue",
		Kind:     clusterQueueKind,
		Description: "A Kueue ClusterQueue: quota per resource flavor for the workloads of the namespaces it selects, " +
			"optionally shared with other queues of a cohort.",
		Attributes: map[string]schema.Attribute{
			"cohort": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Cohort (Kueue `spec.cohortName`) whose queues lend and borrow unused quota. Needed for `borrowing_limit`.",
				Validators:          []validator.String{validators.DNSSubdomain()},
			},
			"queueing_strategy": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString("BestEffortFIFO"),
				MarkdownDescription: "`BestEffortFIFO` (default: a workload that does not fit does not block smaller ones behind it) or `StrictFIFO`.",
				Validators:          []validator.String{stringvalidator.OneOf("BestEffortFIFO", "StrictFIFO")},
			},
			"stop_policy": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString("None"),
				MarkdownDescription: "`None` (default), `Hold` (admit nothing new) or `HoldAndDrain` (also evict admitted workloads).",
				Validators:          []validator.String{stringvalidator.OneOf("None", "Hold", "HoldAndDrain")},
			},
			"namespace_selector": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Namespaces whose LocalQueues may submit to this queue. Unset means every namespace " +
					"(the provider writes Kueue's match-all `{}`; Kueue's own default would match none).",
				Attributes: map[string]schema.Attribute{
					"match_labels": schema.MapAttribute{ElementType: types.StringType, Optional: true, Validators: []validator.Map{validators.Labels()}},
					"match_expressions": schema.ListNestedAttribute{
						Optional: true,
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"key":      schema.StringAttribute{Required: true, Validators: []validator.String{validators.QualifiedName()}},
							"operator": schema.StringAttribute{Required: true, MarkdownDescription: "`In`, `NotIn`, `Exists` or `DoesNotExist`.", Validators: []validator.String{stringvalidator.OneOf("In", "NotIn", "Exists", "DoesNotExist")}},
							"values":   schema.ListAttribute{ElementType: types.StringType, Optional: true},
						}},
					},
				},
			},
			"resource_groups": schema.ListNestedAttribute{
				Required: true,
				MarkdownDescription: "Groups of resources whose quota is given together per flavor. Every flavor of a group lists " +
					"exactly the group's `covered_resources`, in the same order.",
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
								Required: true,
								NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
									"name":            schema.StringAttribute{Required: true, Validators: []validator.String{validators.QualifiedName()}},
									"nominal_quota":   schema.StringAttribute{Required: true, MarkdownDescription: "Quota as a Kubernetes quantity, e.g. `\"8\"`, `\"64Gi\"`.", Validators: []validator.String{validators.Quantity()}},
									"borrowing_limit": schema.StringAttribute{Optional: true, MarkdownDescription: "Most this queue may borrow from its cohort. Needs `cohort`.", Validators: []validator.String{validators.Quantity()}},
									"lending_limit":   schema.StringAttribute{Optional: true, MarkdownDescription: "Most of the nominal quota other queues of the cohort may borrow. At most `nominal_quota`.", Validators: []validator.String{validators.Quantity()}},
								}},
							},
						}},
					},
				}},
			},
		},
		Fields:   clusterQueueFields,
		Read:     readClusterQueue,
		Validate: validateClusterQueue,
	})
}

func clusterQueueFields(m *clusterQueueModel) map[string]any {
	spec := map[string]any{}
	object.Put(spec, "cohortName", m.Cohort)
	object.Put(spec, "queueingStrategy", m.QueueingStrategy)
	object.Put(spec, "stopPolicy", m.StopPolicy)
	spec["namespaceSelector"] = selectorOut(m.NamespaceSelector)
	groups := make([]any, len(m.ResourceGroups))
	for i, g := range m.ResourceGroups {
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
		groups[i] = map[string]any{"coveredResources": object.ListOut(g.CoveredResources), "flavors": flavors}
	}
	spec["resourceGroups"] = groups
	return map[string]any{"spec": spec}
}

// selectorOut writes a label selector; nil means every namespace ({}).
func selectorOut(s *labelSelector) map[string]any {
	out := map[string]any{}
	if s == nil {
		return out
	}
	object.Put(out, "matchLabels", object.MapOut(s.MatchLabels))
	if len(s.MatchExpressions) > 0 {
		exprs := make([]any, len(s.MatchExpressions))
		for i, e := range s.MatchExpressions {
			em := map[string]any{"key": e.Key.ValueString(), "operator": e.Operator.ValueString()}
			object.Put(em, "values", object.ListOut(e.Values))
			exprs[i] = em
		}
		out["matchExpressions"] = exprs
	}
	return out
}

func readClusterQueue(live map[string]any, m *clusterQueueModel) {
	spec := object.Fields(live, "spec")
	m.Cohort = object.String(spec["cohortName"], m.Cohort)
	m.QueueingStrategy = object.String(spec["queueingStrategy"], m.QueueingStrategy)
	m.StopPolicy = object.String(spec["stopPolicy"], m.StopPolicy)
	m.NamespaceSelector = selectorIn(object.Fields(spec, "namespaceSelector"), m.NamespaceSelector)

	prior := map[[2]string]resourceQuota{}
	for _, g := range m.ResourceGroups {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				prior[[2]string{f.Name.ValueString(), r.Name.ValueString()}] = r
			}
		}
	}
	var groups []resourceGroup
	var priorGroups = m.ResourceGroups
	for i, g := range object.Items(spec, "resourceGroups") {
		var pg resourceGroup
		if i < len(priorGroups) {
			pg = priorGroups[i]
		}
		rg := resourceGroup{CoveredResources: object.StringList(g["coveredResources"], pg.CoveredResources)}
		for _, f := range object.Items(g, "flavors") {
			fq := flavorQuotas{Name: object.String(f["name"], types.StringNull())}
			for _, r := range object.Items(f, "resources") {
				name := object.String(r["name"], types.StringNull())
				p := prior[[2]string{fq.Name.ValueString(), name.ValueString()}]
				fq.Resources = append(fq.Resources, resourceQuota{
					Name:           name,
					NominalQuota:   object.Quantity(r["nominalQuota"], p.NominalQuota),
					BorrowingLimit: object.Quantity(r["borrowingLimit"], p.BorrowingLimit),
					LendingLimit:   object.Quantity(r["lendingLimit"], p.LendingLimit),
				})
			}
			rg.Flavors = append(rg.Flavors, fq)
		}
		groups = append(groups, rg)
	}
	m.ResourceGroups = groups
}

// selectorIn reads a namespace selector. Match-all ({} or absent) reads as unset
// unless the configuration spelled it as an empty object.
func selectorIn(live map[string]any, prior *labelSelector) *labelSelector {
	var p labelSelector
	if prior != nil {
		p = *prior
	}
	s := &labelSelector{MatchLabels: object.StringMap(live["matchLabels"], p.MatchLabels)}
	for i, e := range object.Items(live, "matchExpressions") {
		var pe selectorRequirement
		if i < len(p.MatchExpressions) {
			pe = p.MatchExpressions[i]
		}
		s.MatchExpressions = append(s.MatchExpressions, selectorRequirement{
			Key:      object.String(e["key"], pe.Key),
			Operator: object.String(e["operator"], pe.Operator),
			Values:   object.StringList(e["values"], pe.Values),
		})
	}
	if s.MatchExpressions == nil {
		s.MatchExpressions = emptyOrNil(p.MatchExpressions)
	}
	if prior == nil && s.MatchLabels.IsNull() && s.MatchExpressions == nil {
		return nil
	}
	return s
}

// validateClusterQueue checks at plan time what Kueue's CRD and webhook would
// reject at apply time, with the attribute path of the offending value.
func validateClusterQueue(m *clusterQueueModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.NamespaceSelector != nil {
		for i, e := range m.NamespaceSelector.MatchExpressions {
			p := path.Root("namespace_selector").AtName("match_expressions").AtListIndex(i).AtName("values")
			switch op := e.Operator.ValueString(); op {
			case "In", "NotIn":
				if len(e.Values) == 0 {
					diags.AddAttributeError(p, "Values required", fmt.Sprintf("operator %q needs at least one value.", op))
				}
			case "Exists", "DoesNotExist":
				if len(e.Values) > 0 {
					diags.AddAttributeError(p, "Values not allowed", fmt.Sprintf("operator %q takes no values.", op))
				}
			}
		}
	}
	hasCohort := !m.Cohort.IsNull() && m.Cohort.ValueString() != ""
	seenResource := map[string]int{} // resource → index of the group covering it
	seenFlavor := map[string]bool{}
	for i, g := range m.ResourceGroups {
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
					fmt.Sprintf("flavor %q appears more than once; a flavor may appear once per ClusterQueue.", f.Name.ValueString()))
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
		if !r.BorrowingLimit.IsNull() && !hasCohort {
			diags.AddAttributeError(ip.AtName("borrowing_limit"), "borrowing_limit without cohort",
				"a queue can only borrow from a cohort: set cohort or remove borrowing_limit.")
		}
		if nominal, lending, ok := quantities(r.NominalQuota, r.LendingLimit); ok && lending.Cmp(nominal) > 0 {
			diags.AddAttributeError(ip.AtName("lending_limit"), "lending_limit above nominal_quota",
				fmt.Sprintf("lending_limit %s is more than nominal_quota %s; a queue cannot lend more than it has.", lending.String(), nominal.String()))
		}
	}
	return diags
}
