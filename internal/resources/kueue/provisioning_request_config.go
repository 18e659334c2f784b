package kueue

import (
	"fmt"
	"math"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type provisioningRequestConfigModel struct {
	object.ClusterMeta
	object.LiveChanges
	ProvisioningClassName types.String   `tfsdk:"provisioning_class_name"`
	Parameters            types.Map      `tfsdk:"parameters"`
	ManagedResources      []types.String `tfsdk:"managed_resources"`
	RetryStrategy         *retryStrategy `tfsdk:"retry_strategy"`
	PodSetUpdates         *podSetUpdates `tfsdk:"pod_set_updates"`
	PodSetMergePolicy     types.String   `tfsdk:"pod_set_merge_policy"`
}

type retryStrategy struct {
	BackoffLimitCount  types.Int64 `tfsdk:"backoff_limit_count"`
	BackoffBaseSeconds types.Int64 `tfsdk:"backoff_base_seconds"`
	BackoffMaxSeconds  types.Int64 `tfsdk:"backoff_max_seconds"`
}

type podSetUpdates struct {
	NodeSelector []nodeSelectorUpdate `tfsdk:"node_selector"`
}

type nodeSelectorUpdate struct {
	Key                              types.String `tfsdk:"key"`
	ValueFromProvisioningClassDetail types.String `tfsdk:"value_from_provisioning_class_detail"`
}

// Kueue's CRD default of retryStrategy; the schema carries it so that an
// unset strategy never diffs.
var (
	retryStrategyTypes   = map[string]attr.Type{"backoff_limit_count": types.Int64Type, "backoff_base_seconds": types.Int64Type, "backoff_max_seconds": types.Int64Type}
	retryStrategyDefault = types.ObjectValueMust(retryStrategyTypes, map[string]attr.Value{
		"backoff_limit_count": types.Int64Value(3), "backoff_base_seconds": types.Int64Value(60), "backoff_max_seconds": types.Int64Value(1800),
	})
	provisioningClassPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// NewProvisioningRequestConfig is aiplatform_provisioning_request_config.
func NewProvisioningRequestConfig() resource.Resource {
	nonNegative32 := []validator.Int64{int64validator.Between(0, math.MaxInt32)}
	return object.New[provisioningRequestConfigModel](object.Spec[provisioningRequestConfigModel]{
		TypeName: "provisioning_request_config",
		Kind:     provisioningRequestConfigKind,
		Description: "A Kueue ProvisioningRequestConfig: how Kueue asks the cluster autoscaler for nodes before admitting a " +
			"workload (a ProvisioningRequest per workload). An `aiplatform_admission_check` with controller " +
			"`kueue.x-k8s.io/provisioning-request` names it in `parameters`.",
		Attributes: map[string]schema.Attribute{
			"provisioning_class_name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The autoscaler's provisioning class, e.g. `check-capacity.autoscaling.x-k8s.io` or " +
					"`best-effort-atomic-scale-up.autoscaling.x-k8s.io`.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 253),
					stringvalidator.RegexMatches(provisioningClassPattern, "must be a lowercase DNS subdomain")},
			},
			"parameters": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Parameters the provisioning class reads (at most 100, values at most 255 characters).",
				Validators: []validator.Map{mapvalidator.SizeAtMost(100),
					mapvalidator.ValueStringsAre(stringvalidator.LengthAtMost(255))},
			},
			"managed_resources": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Resources the autoscaler provisions, e.g. `[\"nvidia.com/gpu\"]`: only pod sets asking for one " +
					"of them go into the ProvisioningRequest. Unset means every resource.",
				Validators: []validator.List{listvalidator.SizeBetween(1, 100), listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(validators.QualifiedName())},
			},
			"retry_strategy": schema.SingleNestedAttribute{
				Optional: true, Computed: true,
				Default:             objectdefault.StaticValue(retryStrategyDefault),
				MarkdownDescription: "How a failed ProvisioningRequest is retried. Default 3 retries, backoff from 60 s up to 1800 s.",
				Attributes: map[string]schema.Attribute{
					"backoff_limit_count": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(3),
						MarkdownDescription: "Retries before the workload is deactivated; 0 turns retrying off. Default 3.", Validators: nonNegative32},
					"backoff_base_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(60),
						MarkdownDescription: "Base of the exponential backoff, in seconds. Default 60.", Validators: nonNegative32},
					"backoff_max_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1800),
						MarkdownDescription: "Longest backoff, in seconds. Default 1800.", Validators: nonNegative32},
				},
			},
			"pod_set_updates": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Updates to the admitted pod sets that steer them onto the provisioned nodes.",
				Attributes: map[string]schema.Attribute{
					"node_selector": schema.ListNestedAttribute{
						Required:            true,
						MarkdownDescription: "Node selector entries whose value is read from the ProvisioningRequest's `status.provisioningClassDetails` (at most 8).",
						Validators:          []validator.List{listvalidator.SizeBetween(1, 8)},
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"key": schema.StringAttribute{Required: true, MarkdownDescription: "Node label key.",
								Validators: []validator.String{validators.QualifiedName()}},
							"value_from_provisioning_class_detail": schema.StringAttribute{Required: true,
								MarkdownDescription: "Key of `status.provisioningClassDetails` whose value becomes the label value.",
								Validators:          []validator.String{stringvalidator.LengthBetween(1, 32768)}},
						}},
					},
				},
			},
			"pod_set_merge_policy": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "`IdenticalPodTemplates` or `IdenticalWorkloadSchedulingRequirements`: merge pod sets before they reach the autoscaler.",
				Validators:          []validator.String{stringvalidator.OneOf("IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements")},
			},
		},
		Fields:   provisioningRequestConfigFields,
		Read:     readProvisioningRequestConfig,
		Validate: validateProvisioningRequestConfig,
	})
}

func provisioningRequestConfigFields(m *provisioningRequestConfigModel) map[string]any {
	spec := map[string]any{}
	object.Put(spec, "provisioningClassName", m.ProvisioningClassName)
	object.Put(spec, "parameters", object.MapOut(m.Parameters))
	object.Put(spec, "managedResources", object.ListOut(m.ManagedResources))
	if r := m.RetryStrategy; r != nil {
		rm := map[string]any{}
		object.Put(rm, "backoffLimitCount", r.BackoffLimitCount)
		object.Put(rm, "backoffBaseSeconds", r.BackoffBaseSeconds)
		object.Put(rm, "backoffMaxSeconds", r.BackoffMaxSeconds)
		spec["retryStrategy"] = rm
	}
	if u := m.PodSetUpdates; u != nil {
		sel := make([]any, len(u.NodeSelector))
		for i, s := range u.NodeSelector {
			sel[i] = map[string]any{"key": s.Key.ValueString(), "valueFromProvisioningClassDetail": s.ValueFromProvisioningClassDetail.ValueString()}
		}
		spec["podSetUpdates"] = map[string]any{"nodeSelector": sel}
	}
	object.Put(spec, "podSetMergePolicy", m.PodSetMergePolicy)
	return map[string]any{"spec": spec}
}

func readProvisioningRequestConfig(live map[string]any, m *provisioningRequestConfigModel) {
	spec := object.Fields(live, "spec")
	m.ProvisioningClassName = object.String(spec["provisioningClassName"], m.ProvisioningClassName)
	m.Parameters = object.StringMap(spec["parameters"], m.Parameters)
	m.ManagedResources = object.StringList(spec["managedResources"], m.ManagedResources)
	if r := object.Fields(spec, "retryStrategy"); r != nil {
		m.RetryStrategy = &retryStrategy{
			BackoffLimitCount:  object.Int64(r["backoffLimitCount"]),
			BackoffBaseSeconds: object.Int64(r["backoffBaseSeconds"]),
			BackoffMaxSeconds:  object.Int64(r["backoffMaxSeconds"]),
		}
	} else {
		m.RetryStrategy = nil
	}
	if u := object.Fields(spec, "podSetUpdates"); u != nil {
		var prior podSetUpdates
		if m.PodSetUpdates != nil {
			prior = *m.PodSetUpdates
		}
		out := &podSetUpdates{}
		for _, s := range object.Items(u, "nodeSelector") {
			out.NodeSelector = append(out.NodeSelector, nodeSelectorUpdate{
				Key:                              object.String(s["key"], types.StringNull()),
				ValueFromProvisioningClassDetail: object.String(s["valueFromProvisioningClassDetail"], types.StringNull()),
			})
		}
		if out.NodeSelector == nil {
			out.NodeSelector = object.EmptyOrNil(prior.NodeSelector)
		}
		m.PodSetUpdates = out
	} else {
		m.PodSetUpdates = nil
	}
	m.PodSetMergePolicy = object.String(spec["podSetMergePolicy"], m.PodSetMergePolicy)
}

func validateProvisioningRequestConfig(m *provisioningRequestConfigModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if u := m.PodSetUpdates; u != nil {
		seen := map[string]bool{}
		for i, s := range u.NodeSelector {
			if !object.Known(s.Key) {
				continue
			}
			if seen[s.Key.ValueString()] {
				diags.AddAttributeError(path.Root("pod_set_updates").AtName("node_selector").AtListIndex(i).AtName("key"), "Duplicate node selector key",
					fmt.Sprintf("key %q is listed twice: Kueue keeps one update per key.", s.Key.ValueString()))
			}
			seen[s.Key.ValueString()] = true
		}
	}
	if r := m.RetryStrategy; r != nil && object.Known(r.BackoffBaseSeconds) && object.Known(r.BackoffMaxSeconds) &&
		r.BackoffBaseSeconds.ValueInt64() > r.BackoffMaxSeconds.ValueInt64() {
		diags.AddAttributeWarning(path.Root("retry_strategy").AtName("backoff_max_seconds"), "Backoff maximum below its base",
			fmt.Sprintf("backoff_max_seconds %d is less than backoff_base_seconds %d: every retry waits backoff_max_seconds.",
				r.BackoffMaxSeconds.ValueInt64(), r.BackoffBaseSeconds.ValueInt64()))
	}
	return diags
}
