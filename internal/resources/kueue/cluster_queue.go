package kueue

import (
	"fmt"
	"math"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type clusterQueueModel struct {
	object.ClusterMeta
	object.LiveChanges
	Cohort            types.String       `tfsdk:"cohort"`
	QueueingStrategy  types.String       `tfsdk:"queueing_strategy"`
	StopPolicy        types.String       `tfsdk:"stop_policy"`
	NamespaceSelector *labelSelector     `tfsdk:"namespace_selector"`
	Preemption        *preemption        `tfsdk:"preemption"`
	FairSharing       *fairSharing       `tfsdk:"fair_sharing"`
	FlavorFungibility *flavorFungibility `tfsdk:"flavor_fungibility"`
	AdmissionChecks   []types.String     `tfsdk:"admission_checks"`
	ChecksStrategy    []admissionRule    `tfsdk:"admission_checks_strategy"`
	ResourceGroups    []resourceGroup    `tfsdk:"resource_groups"`
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

type preemption struct {
	WithinClusterQueue  types.String        `tfsdk:"within_cluster_queue"`
	ReclaimWithinCohort types.String        `tfsdk:"reclaim_within_cohort"`
	BorrowWithinCohort  *borrowWithinCohort `tfsdk:"borrow_within_cohort"`
}

type borrowWithinCohort struct {
	Policy               types.String `tfsdk:"policy"`
	MaxPriorityThreshold types.Int64  `tfsdk:"max_priority_threshold"`
}

type flavorFungibility struct {
	WhenCanBorrow  types.String `tfsdk:"when_can_borrow"`
	WhenCanPreempt types.String `tfsdk:"when_can_preempt"`
	Preference     types.String `tfsdk:"preference"`
}

// Kueue's CRD defaults for the objects below; the schema carries the same
// defaults so a server-defaulted field never shows as a diff.
var (
	borrowWithinCohortTypes = map[string]attr.Type{"policy": types.StringType, "max_priority_threshold": types.Int64Type}
	preemptionTypes         = map[string]attr.Type{
		"within_cluster_queue": types.StringType, "reclaim_within_cohort": types.StringType,
		"borrow_within_cohort": types.ObjectType{AttrTypes: borrowWithinCohortTypes},
	}
	preemptionDefault = types.ObjectValueMust(preemptionTypes, map[string]attr.Value{
		"within_cluster_queue": types.StringValue("Never"), "reclaim_within_cohort": types.StringValue("Never"),
		"borrow_within_cohort": types.ObjectValueMust(borrowWithinCohortTypes, map[string]attr.Value{
			"policy": types.StringValue("Never"), "max_priority_threshold": types.Int64Null(),
		}),
	})
	fungibilityTypes   = map[string]attr.Type{"when_can_borrow": types.StringType, "when_can_preempt": types.StringType, "preference": types.StringType}
	fungibilityDefault = types.ObjectValueMust(fungibilityTypes, map[string]attr.Value{
		"when_can_borrow": types.StringValue("MayStopSearch"), "when_can_preempt": types.StringValue("TryNextFlavor"), "preference": types.StringNull(),
	})
)

// NewClusterQueue is aiplatform_cluster_queue.
func NewClusterQueue() resource.Resource {
	return object.New[clusterQueueModel](object.Spec[clusterQueueModel]{
		TypeName: "cluster_queue",
		Kind:     clusterQueueKind,
		Description: "A Kueue ClusterQueue: quota per resource flavor for the workloads of the namespaces it selects, " +
			"optionally shared with the other members of a cohort. Quota is either fixed or derived at every plan from " +
			"the allocatable resources of the live nodes (`from_allocatable`), so it follows the hardware.",
		Attributes: map[string]schema.Attribute{
			"cohort": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Cohort (Kueue `spec.cohortName`) whose members lend and borrow unused quota. Needed for `borrowing_limit`.",
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
					"match_labels": schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Labels a namespace must all carry, e.g. `{ team = \"research\" }`; keys and values checked at plan as Kubernetes labels.", Validators: []validator.Map{validators.Labels()}},
					"match_expressions": schema.ListNestedAttribute{
						Optional:            true,
						MarkdownDescription: "Label requirements a namespace must all meet, as in a Kubernetes label selector.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"key":      schema.StringAttribute{Required: true, MarkdownDescription: "Namespace label key.", Validators: []validator.String{validators.QualifiedName()}},
							"operator": schema.StringAttribute{Required: true, MarkdownDescription: "`In`, `NotIn`, `Exists` or `DoesNotExist`.", Validators: []validator.String{stringvalidator.OneOf("In", "NotIn", "Exists", "DoesNotExist")}},
							"values":   schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Label values: at least one with `In` and `NotIn`, none with `Exists` and `DoesNotExist` (checked at plan)."},
						}},
					},
				},
			},
			"preemption": schema.SingleNestedAttribute{
				Optional: true, Computed: true,
				Default:             objectdefault.StaticValue(preemptionDefault),
				MarkdownDescription: "Which admitted workloads a pending one may evict. Default: never preempt.",
				Attributes: map[string]schema.Attribute{
					"within_cluster_queue": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("Never"),
						MarkdownDescription: "`Never` (default), `LowerPriority` or `LowerOrNewerEqualPriority`: evict workloads of this queue.",
						Validators:          []validator.String{stringvalidator.OneOf("Never", "LowerPriority", "LowerOrNewerEqualPriority")}},
					"reclaim_within_cohort": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("Never"),
						MarkdownDescription: "`Never` (default), `LowerPriority` or `Any`: take back lent quota by evicting other queues' workloads.",
						Validators:          []validator.String{stringvalidator.OneOf("Never", "LowerPriority", "Any")}},
					"borrow_within_cohort": schema.SingleNestedAttribute{
						Optional: true, Computed: true,
						Default: objectdefault.StaticValue(types.ObjectValueMust(borrowWithinCohortTypes, map[string]attr.Value{
							"policy": types.StringValue("Never"), "max_priority_threshold": types.Int64Null(),
						})),
						MarkdownDescription: "Preempt in other queues of the cohort while borrowing. Needs `reclaim_within_cohort` other than `Never`.",
						Attributes: map[string]schema.Attribute{
							"policy": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("Never"),
								MarkdownDescription: "`Never` (default) or `LowerPriority`.", Validators: []validator.String{stringvalidator.OneOf("Never", "LowerPriority")}},
							"max_priority_threshold": schema.Int64Attribute{Optional: true,
								MarkdownDescription: "Only preempt workloads of at most this priority.",
								Validators:          []validator.Int64{int64validator.Between(math.MinInt32, math.MaxInt32)}},
						},
					},
				},
			},
			"fair_sharing": fairSharingAttribute("Fair sharing of the cohort's unused quota (when Kueue's fair sharing is enabled)."),
			"flavor_fungibility": schema.SingleNestedAttribute{
				Optional: true, Computed: true,
				Default:             objectdefault.StaticValue(fungibilityDefault),
				MarkdownDescription: "Whether a workload that would need to borrow or preempt in one flavor tries the next flavor first.",
				Attributes: map[string]schema.Attribute{
					"when_can_borrow": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("MayStopSearch"),
						MarkdownDescription: "`MayStopSearch` (default) or `TryNextFlavor`.", Validators: []validator.String{stringvalidator.OneOf("MayStopSearch", "TryNextFlavor")}},
					"when_can_preempt": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("TryNextFlavor"),
						MarkdownDescription: "`TryNextFlavor` (default) or `MayStopSearch`.", Validators: []validator.String{stringvalidator.OneOf("MayStopSearch", "TryNextFlavor")}},
					"preference": schema.StringAttribute{Optional: true,
						MarkdownDescription: "`BorrowingOverPreemption` or `PreemptionOverBorrowing`; needs both `when_can_*` set to `TryNextFlavor`.",
						Validators:          []validator.String{stringvalidator.OneOf("BorrowingOverPreemption", "PreemptionOverBorrowing")}},
				},
			},
			"admission_checks": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Names of AdmissionChecks every workload of this queue must pass. For checks that apply to some flavors only, use `admission_checks_strategy` instead.",
				Validators: []validator.List{listvalidator.SizeBetween(1, 64), listvalidator.UniqueValues(),
					listvalidator.ConflictsWith(path.MatchRoot("admission_checks_strategy"))},
			},
			"admission_checks_strategy": admissionChecksStrategyAttribute(),
			"resource_groups":           resourceGroupsAttribute("ClusterQueue"),
		},
		Fields:     clusterQueueFields,
		Read:       readClusterQueue,
		Validate:   validateClusterQueue,
		ModifyPlan: planClusterQueue,
	})
}

func clusterQueueFields(m *clusterQueueModel) map[string]any {
	spec := map[string]any{}
	object.Put(spec, "cohortName", m.Cohort)
	object.Put(spec, "queueingStrategy", m.QueueingStrategy)
	object.Put(spec, "stopPolicy", m.StopPolicy)
	spec["namespaceSelector"] = selectorOut(m.NamespaceSelector)
	if p := m.Preemption; p != nil {
		pm := map[string]any{}
		object.Put(pm, "withinClusterQueue", p.WithinClusterQueue)
		object.Put(pm, "reclaimWithinCohort", p.ReclaimWithinCohort)
		if b := p.BorrowWithinCohort; b != nil {
			bm := map[string]any{}
			object.Put(bm, "policy", b.Policy)
			object.Put(bm, "maxPriorityThreshold", b.MaxPriorityThreshold)
			pm["borrowWithinCohort"] = bm
		}
		spec["preemption"] = pm
	}
	fairSharingOut(spec, m.FairSharing)
	if f := m.FlavorFungibility; f != nil {
		fm := map[string]any{}
		object.Put(fm, "whenCanBorrow", f.WhenCanBorrow)
		object.Put(fm, "whenCanPreempt", f.WhenCanPreempt)
		object.Put(fm, "preference", f.Preference)
		spec["flavorFungibility"] = fm
	}
	admissionChecksOut(spec, m.AdmissionChecks, m.ChecksStrategy)
	if len(m.ResourceGroups) > 0 {
		spec["resourceGroups"] = resourceGroupsOut(m.ResourceGroups)
	}
	return map[string]any{"spec": spec}
}

func readClusterQueue(live map[string]any, m *clusterQueueModel) {
	spec := object.Fields(live, "spec")
	m.Cohort = object.String(spec["cohortName"], m.Cohort)
	m.QueueingStrategy = object.String(spec["queueingStrategy"], m.QueueingStrategy)
	m.StopPolicy = object.String(spec["stopPolicy"], m.StopPolicy)
	m.NamespaceSelector = selectorIn(object.Fields(spec, "namespaceSelector"), m.NamespaceSelector)
	if pm := object.Fields(spec, "preemption"); pm != nil {
		prior := m.Preemption
		if prior == nil {
			prior = &preemption{}
		}
		p := &preemption{
			WithinClusterQueue:  object.String(pm["withinClusterQueue"], prior.WithinClusterQueue),
			ReclaimWithinCohort: object.String(pm["reclaimWithinCohort"], prior.ReclaimWithinCohort),
		}
		if bm := object.Fields(pm, "borrowWithinCohort"); bm != nil {
			p.BorrowWithinCohort = &borrowWithinCohort{Policy: object.String(bm["policy"], types.StringNull()), MaxPriorityThreshold: object.Int64(bm["maxPriorityThreshold"])}
		}
		m.Preemption = p
	} else {
		m.Preemption = nil
	}
	m.FairSharing = fairSharingIn(spec, m.FairSharing)
	if fm := object.Fields(spec, "flavorFungibility"); fm != nil {
		m.FlavorFungibility = &flavorFungibility{
			WhenCanBorrow:  object.String(fm["whenCanBorrow"], types.StringNull()),
			WhenCanPreempt: object.String(fm["whenCanPreempt"], types.StringNull()),
			Preference:     object.String(fm["preference"], types.StringNull()),
		}
	} else {
		m.FlavorFungibility = nil
	}
	m.AdmissionChecks, m.ChecksStrategy = admissionChecksIn(object.Items(spec, "admissionChecksStrategy", "admissionChecks"), m.AdmissionChecks, m.ChecksStrategy)
	m.ResourceGroups = resourceGroupsIn(object.Items(spec, "resourceGroups"), m.ResourceGroups)
}

func validateClusterQueue(m *clusterQueueModel) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.Append(validateSelector(m.NamespaceSelector)...)
	if p := m.Preemption; p != nil && p.BorrowWithinCohort != nil {
		// In the configuration an unset value is null; Kueue's default is Never.
		reclaim, policy := orDefault(p.ReclaimWithinCohort, "Never"), orDefault(p.BorrowWithinCohort.Policy, "Never")
		if reclaim == "Never" && policy != "Never" && policy != "" {
			diags.AddAttributeError(path.Root("preemption").AtName("borrow_within_cohort").AtName("policy"), "borrow_within_cohort needs reclaim_within_cohort",
				"Kueue only preempts while borrowing when reclaim_within_cohort is LowerPriority or Any.")
		}
	}
	if f := m.FlavorFungibility; f != nil && !f.Preference.IsNull() && !f.Preference.IsUnknown() {
		borrow, preempt := orDefault(f.WhenCanBorrow, "MayStopSearch"), orDefault(f.WhenCanPreempt, "TryNextFlavor")
		if borrow != "" && preempt != "" && (borrow != "TryNextFlavor" || preempt != "TryNextFlavor") {
			diags.AddAttributeError(path.Root("flavor_fungibility").AtName("preference"), "preference needs TryNextFlavor",
				"Kueue accepts a preference only when when_can_borrow and when_can_preempt are both TryNextFlavor.")
		}
	}
	diags.Append(validateChecksStrategy(m.ChecksStrategy, m.ResourceGroups)...)
	hasCohort := !m.Cohort.IsNull() && m.Cohort.ValueString() != ""
	diags.Append(validateResourceGroups(m.ResourceGroups, hasCohort || m.Cohort.IsUnknown())...)
	return diags
}

// orDefault is the value, def when null, "" when unknown (not checkable yet).
func orDefault(v types.String, def string) string {
	switch {
	case v.IsUnknown():
		return ""
	case v.IsNull():
		return def
	}
	return v.ValueString()
}

func validateSelector(s *labelSelector) diag.Diagnostics {
	var diags diag.Diagnostics
	if s == nil {
		return diags
	}
	for i, e := range s.MatchExpressions {
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
	return diags
}

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
		s.MatchExpressions = object.EmptyOrNil(p.MatchExpressions)
	}
	if prior == nil && s.MatchLabels.IsNull() && s.MatchExpressions == nil {
		return nil
	}
	return s
}
