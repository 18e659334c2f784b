package installs

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// The manager configuration sections of aiplatform_kueue beyond the
// integrations: WaitForPodsReady (with its requeuing), fair sharing,
// admission fair sharing, MultiKueue (helm.KueueConfig holds them).

type waitForPodsReady struct {
	Enable            types.Bool      `tfsdk:"enable"`
	Timeout           types.String    `tfsdk:"timeout"`
	BlockAdmission    types.Bool      `tfsdk:"block_admission"`
	RecoveryTimeout   types.String    `tfsdk:"recovery_timeout"`
	RequeuingStrategy *kueueRequeuing `tfsdk:"requeuing_strategy"`
}

type kueueRequeuing struct {
	Timestamp          types.String `tfsdk:"timestamp"`
	BackoffLimitCount  types.Int64  `tfsdk:"backoff_limit_count"`
	BackoffBaseSeconds types.Int64  `tfsdk:"backoff_base_seconds"`
	BackoffMaxSeconds  types.Int64  `tfsdk:"backoff_max_seconds"`
}

type kueueFairSharing struct {
	PreemptionStrategies types.List `tfsdk:"preemption_strategies"`
}

type kueueAdmissionFairSharing struct {
	UsageHalfLifeTime     types.String `tfsdk:"usage_half_life_time"`
	UsageSamplingInterval types.String `tfsdk:"usage_sampling_interval"`
	ResourceWeights       types.Map    `tfsdk:"resource_weights"`
}

type kueueMultiKueue struct {
	GCInterval          types.String `tfsdk:"gc_interval"`
	Origin              types.String `tfsdk:"origin"`
	WorkerLostTimeout   types.String `tfsdk:"worker_lost_timeout"`
	DispatcherName      types.String `tfsdk:"dispatcher_name"`
	IncrementalStepSize types.Int64  `tfsdk:"incremental_step_size"`
}

// MultiKueue's dispatchers (multiKueue.dispatcherName).
const (
	dispatcherAllAtOnce   = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
	dispatcherIncremental = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
)

func durationAttr(desc string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, MarkdownDescription: desc, Validators: []validator.String{validators.Duration(0, 0)}}
}

// kueueSettingsAttributes are the schema of the sections.
func kueueSettingsAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"wait_for_pods_ready": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "All-or-nothing admission (`waitForPodsReady`): a workload whose pods are not all ready within `timeout` is evicted and requeued. " +
				"Unset leaves the chart's setting: **off up to Kueue 0.18, on from 0.19** (timeout 30m, recovery timeout 30m). " +
				"`enable = false` on 0.19 and later also sets the feature gate `DisableWaitForPodsReady`, which an import reads back as `enable = false`.",
			Attributes: map[string]schema.Attribute{
				"enable":           schema.BoolAttribute{Required: true, MarkdownDescription: "Turn it on or off."},
				"timeout":          durationAttr("How long the pods may take, as a duration (`\"5m\"`, the default when enabled)."),
				"block_admission":  schema.BoolAttribute{Optional: true, MarkdownDescription: "Admit no other workload of the ClusterQueue until this one's pods are ready (`blockAdmission`; Kueue's default `false`)."},
				"recovery_timeout": schema.StringAttribute{Optional: true, MarkdownDescription: "How long a running workload may have pods not ready before it is requeued (`recoveryTimeout`; Kueue's default: `timeout`; `\"0s\"` turns it off).", Validators: []validator.String{nonNegativeDuration{}}},
				"requeuing_strategy": schema.SingleNestedAttribute{Optional: true,
					MarkdownDescription: "How an evicted workload is requeued (`requeuingStrategy`).",
					Attributes: map[string]schema.Attribute{
						"timestamp": schema.StringAttribute{Optional: true, MarkdownDescription: "Queue order after requeuing: `Eviction` (Kueue's default) or `Creation`.",
							Validators: []validator.String{stringvalidator.OneOf("Eviction", "Creation")}},
						"backoff_limit_count":  schema.Int64Attribute{Optional: true, MarkdownDescription: "Requeues before the workload is deactivated (unset: no limit).", Validators: []validator.Int64{int64validator.AtLeast(0)}},
						"backoff_base_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "Base of the exponential requeue backoff, seconds (Kueue's default 60).", Validators: []validator.Int64{int64validator.AtLeast(1)}},
						"backoff_max_seconds":  schema.Int64Attribute{Optional: true, MarkdownDescription: "Longest requeue backoff, seconds (Kueue's default 3600).", Validators: []validator.Int64{int64validator.AtLeast(1)}},
					}},
			}},
		"fair_sharing": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Fair sharing between the ClusterQueues of a cohort (`fairSharing`, on when set): borrowing and preemption follow each queue's `fair_sharing.weight`.",
			Attributes: map[string]schema.Attribute{
				"preemption_strategies": schema.ListAttribute{ElementType: types.StringType, Required: true,
					MarkdownDescription: "`LessThanOrEqualToFinalShare`, `LessThanInitialShare`, tried in order; Kueue's manager refuses to start without one, so set e.g. both, in that order.",
					Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(), listvalidator.ValueStringsAre(stringvalidator.OneOf("LessThanOrEqualToFinalShare", "LessThanInitialShare"))}},
			}},
		"admission_fair_sharing": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Admission fair sharing (`admissionFairSharing`): a ClusterQueue whose `admissionScope.admissionMode` is `UsageBasedAdmissionFairSharing` admits first from the LocalQueues that used least recently. " +
				"Needs the feature gate `AdmissionFairSharing` (`feature_gates`).",
			Attributes: map[string]schema.Attribute{
				"usage_half_life_time":    schema.StringAttribute{Required: true, MarkdownDescription: "After this long, past usage counts half (`usageHalfLifeTime`), e.g. `\"168h\"`.", Validators: []validator.String{validators.Duration(0, 0)}},
				"usage_sampling_interval": durationAttr("How often usage is sampled (`usageSamplingInterval`; Kueue's default 5m)."),
				"resource_weights": schema.MapAttribute{ElementType: types.Float64Type, Optional: true,
					MarkdownDescription: "Weight of each resource in the usage, e.g. `{ \"nvidia.com/gpu\" = 10, cpu = 0.5 }` (Kueue's default 1).",
					Validators:          []validator.Map{mapvalidator.KeysAre(validators.QualifiedName())}},
			}},
		"multikueue": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "The manager side of MultiKueue (`multiKueue`): how this Kueue dispatches workloads to worker clusters.",
			Attributes: map[string]schema.Attribute{
				"gc_interval":         durationAttr("How often objects left on workers are collected (`gcInterval`; Kueue's default 1m)."),
				"origin":              schema.StringAttribute{Optional: true, MarkdownDescription: "Label value marking this manager's objects on the workers (`origin`; Kueue's default `multikueue`).", Validators: []validator.String{validators.LabelValue()}},
				"worker_lost_timeout": durationAttr("How long a workload waits for a lost worker before it is requeued (`workerLostTimeout`; Kueue's default 15m)."),
				"dispatcher_name": schema.StringAttribute{Optional: true,
					MarkdownDescription: "`" + dispatcherAllAtOnce + "` (Kueue's default) or `" + dispatcherIncremental + "`.",
					Validators:          []validator.String{stringvalidator.OneOf(dispatcherAllAtOnce, dispatcherIncremental)}},
				"incremental_step_size": schema.Int64Attribute{Optional: true,
					MarkdownDescription: "Workers the incremental dispatcher adds per step (`incrementalDispatcherConfig.stepSize`, Kueue 0.19 and later).",
					Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			}},
	}
}

// nonNegativeDuration accepts a Go duration of 0 or more.
type nonNegativeDuration struct{}

func (nonNegativeDuration) Description(context.Context) string { return "a duration of 0s or more" }
func (v nonNegativeDuration) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (nonNegativeDuration) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if d, err := time.ParseDuration(req.ConfigValue.ValueString()); err != nil || d < 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", fmt.Sprintf("%q is not a duration of 0s or more such as \"0s\", \"5m\" or \"2h\"", req.ConfigValue.ValueString()))
	}
}

func optString(v types.String) string { return v.ValueString() }

func optInt(v types.Int64) *int64 {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	n := v.ValueInt64()
	return &n
}

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func int64OrNull(n *int64) types.Int64 {
	if n == nil {
		return types.Int64Null()
	}
	return types.Int64Value(*n)
}

// settings writes the sections of m into c.
func (m *kueueModel) settings(c *helm.KueueConfig) {
	if w := m.WaitForPodsReady; w != nil {
		hw := &helm.WaitForPodsReady{Enable: w.Enable.ValueBool(), Timeout: w.Timeout.ValueString(), RecoveryTimeout: optString(w.RecoveryTimeout)}
		if !w.BlockAdmission.IsNull() && !w.BlockAdmission.IsUnknown() {
			b := w.BlockAdmission.ValueBool()
			hw.BlockAdmission = &b
		}
		if r := w.RequeuingStrategy; r != nil {
			hw.Requeuing = &helm.KueueRequeuing{Timestamp: optString(r.Timestamp), BackoffLimitCount: optInt(r.BackoffLimitCount),
				BackoffBaseSeconds: optInt(r.BackoffBaseSeconds), BackoffMaxSeconds: optInt(r.BackoffMaxSeconds)}
		}
		c.WaitForPodsReady = hw
	}
	if f := m.FairSharing; f != nil {
		c.FairSharing = &helm.KueueFairSharing{PreemptionStrategies: listStrings(f.PreemptionStrategies)}
	}
	if a := m.AdmissionFairSharing; a != nil {
		ha := &helm.KueueAdmissionFairSharing{UsageHalfLifeTime: optString(a.UsageHalfLifeTime), UsageSamplingInterval: optString(a.UsageSamplingInterval)}
		if !a.ResourceWeights.IsNull() && !a.ResourceWeights.IsUnknown() {
			ha.ResourceWeights = map[string]float64{}
			for k, v := range a.ResourceWeights.Elements() {
				if f, ok := v.(types.Float64); ok {
					ha.ResourceWeights[k] = f.ValueFloat64()
				}
			}
		}
		c.AdmissionFairSharing = ha
	}
	if mk := m.MultiKueue; mk != nil {
		c.MultiKueue = &helm.KueueMultiKueue{GCInterval: optString(mk.GCInterval), Origin: optString(mk.Origin),
			WorkerLostTimeout: optString(mk.WorkerLostTimeout), DispatcherName: optString(mk.DispatcherName), IncrementalStepSize: optInt(mk.IncrementalStepSize)}
	}
}

// settingsFromConfig sets the sections of m from c (import).
func (m *kueueModel) settingsFromConfig(c helm.KueueConfig) {
	if w := c.WaitForPodsReady; w != nil {
		mw := &waitForPodsReady{Enable: types.BoolValue(w.Enable), Timeout: stringOrNull(w.Timeout), RecoveryTimeout: stringOrNull(w.RecoveryTimeout), BlockAdmission: types.BoolNull()}
		if w.BlockAdmission != nil {
			mw.BlockAdmission = types.BoolValue(*w.BlockAdmission)
		}
		if r := w.Requeuing; r != nil {
			mw.RequeuingStrategy = &kueueRequeuing{Timestamp: stringOrNull(r.Timestamp), BackoffLimitCount: int64OrNull(r.BackoffLimitCount),
				BackoffBaseSeconds: int64OrNull(r.BackoffBaseSeconds), BackoffMaxSeconds: int64OrNull(r.BackoffMaxSeconds)}
		}
		m.WaitForPodsReady = mw
	}
	if f := c.FairSharing; f != nil {
		list := types.ListNull(types.StringType)
		if len(f.PreemptionStrategies) > 0 {
			vals := make([]attr.Value, len(f.PreemptionStrategies))
			for i, s := range f.PreemptionStrategies {
				vals[i] = types.StringValue(s)
			}
			list = types.ListValueMust(types.StringType, vals)
		}
		m.FairSharing = &kueueFairSharing{PreemptionStrategies: list}
	}
	if a := c.AdmissionFairSharing; a != nil {
		weights := types.MapNull(types.Float64Type)
		if len(a.ResourceWeights) > 0 {
			elems := map[string]attr.Value{}
			for k, v := range a.ResourceWeights {
				elems[k] = types.Float64Value(v)
			}
			weights = types.MapValueMust(types.Float64Type, elems)
		}
		m.AdmissionFairSharing = &kueueAdmissionFairSharing{UsageHalfLifeTime: stringOrNull(a.UsageHalfLifeTime),
			UsageSamplingInterval: stringOrNull(a.UsageSamplingInterval), ResourceWeights: weights}
	}
	if mk := c.MultiKueue; mk != nil {
		m.MultiKueue = &kueueMultiKueue{GCInterval: stringOrNull(mk.GCInterval), Origin: stringOrNull(mk.Origin),
			WorkerLostTimeout: stringOrNull(mk.WorkerLostTimeout), DispatcherName: stringOrNull(mk.DispatcherName), IncrementalStepSize: int64OrNull(mk.IncrementalStepSize)}
	}
}

func listStrings(l types.List) []string {
	var out []string
	for _, v := range l.Elements() {
		if s, ok := v.(types.String); ok {
			out = append(out, s.ValueString())
		}
	}
	return out
}

// validateSettings refuses settings without effect.
func validateSettings(m *kueueModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if w := m.WaitForPodsReady; w != nil && !w.Enable.IsUnknown() && !w.Enable.ValueBool() {
		for name, set := range map[string]bool{"block_admission": !w.BlockAdmission.IsNull(), "recovery_timeout": !w.RecoveryTimeout.IsNull(), "requeuing_strategy": w.RequeuingStrategy != nil} {
			if set {
				diags.AddAttributeError(path.Root("wait_for_pods_ready").AtName(name), "Setting without effect",
					fmt.Sprintf("wait_for_pods_ready.%s needs enable = true: Kueue does not wait for pods ready when it is off.", name))
			}
		}
	}
	if mk := m.MultiKueue; mk != nil && !mk.IncrementalStepSize.IsNull() && !mk.DispatcherName.IsUnknown() && mk.DispatcherName.ValueString() != dispatcherIncremental {
		diags.AddAttributeError(path.Root("multikueue").AtName("incremental_step_size"), "Setting without effect",
			fmt.Sprintf("multikueue.incremental_step_size is the step of the incremental dispatcher: set dispatcher_name = %q.", dispatcherIncremental))
	}
	return diags
}
