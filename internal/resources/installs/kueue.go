package installs

import (
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
)

type kueueModel struct {
	releaseModel
	Integrations               types.Set         `tfsdk:"integrations"`
	ManageJobsWithoutQueueName types.Bool        `tfsdk:"manage_jobs_without_queue_name"`
	WaitForPodsReady           *waitForPodsReady `tfsdk:"wait_for_pods_ready"`
	FeatureGates               types.Map         `tfsdk:"feature_gates"`
	Replicas                   types.Int64       `tfsdk:"replicas"`
	// kueue_settings.go
	FairSharing          *kueueFairSharing          `tfsdk:"fair_sharing"`
	AdmissionFairSharing *kueueAdmissionFairSharing `tfsdk:"admission_fair_sharing"`
	MultiKueue           *kueueMultiKueue           `tfsdk:"multikueue"`
}

// NewKueue is aiplatform_kueue.
func NewKueue() resource.Resource {
	return newRelease[kueueModel](chartSpec[kueueModel]{
		TypeName: "kueue",
		Chart:    helm.Kueue,
		Description: "Kueue installed from its Helm chart with the Helm SDK. The integrations are a set, written into the " +
			"manager configuration (the chart's one YAML string value `managerConfig.controllerManagerConfigYaml` is parsed, " +
			"changed and written back: never edit that string). Install and upgrade are atomic — a failed upgrade rolls back " +
			"to the previous revision and says why — and wait until every object is ready. Every refresh compares each " +
			"object of the release with the live cluster (`drift`).\n\n" +
			"**Volcano**: the pod-based integrations (`pod`, `deployment`, `statefulset`) and `manage_jobs_without_queue_name` " +
			"make Kueue's webhook take Pods and Jobs that carry no `kueue.x-k8s.io/queue-name` label — all of Volcano's — so " +
			"the plan fails when Volcano is in the cluster or planned in the same configuration (the message says what to change). " +
			"The default, `[\"batch/job\"]`, coexists with Volcano.\n\n" +
			"Resources that need Kueue's CRDs (`aiplatform_cluster_queue`, …) plan without them and apply after the install when " +
			"they reference this resource or list it in `depends_on`, so an empty cluster gets Kueue and its queues in one apply. " +
			"The chart's default integrations include `pod`, `deployment` and `statefulset`; this resource replaces them.\n\n" +
			"**Kueue 0.19** (the default `version`, 0.19.2; 0.17.0 keeps working) changes what users see:\n" +
			"- WaitForPodsReady is on by default (timeout 30m, recovery timeout 30m): a workload whose pods are not all ready " +
			"within 30 minutes is evicted and requeued. `wait_for_pods_ready = { enable = false }` turns it off (on 0.19 with the " +
			"feature gate `DisableWaitForPodsReady`, which the provider sets); leaving `wait_for_pods_ready` unset keeps Kueue's default.\n" +
			"- KubeRay sidecars count against quota: a RayJob in `SidecarMode` reserves its submitter (500m CPU, 200Mi memory by default) " +
			"and an autoscaling RayCluster its autoscaler (500m CPU, 512Mi) on the head pod; ClusterQueues sized to the pods alone may " +
			"stop admitting them.\n" +
			"- The `kueue.x-k8s.io/queue-name` label can no longer be removed from a running Ray job; LeaderWorkerSet group size is " +
			"immutable while Kueue manages it (gate `LWSImmutableGroupSize`).\n" +
			"- Topology-aware scheduling: `TASMultiLayerTopology` and hostname-prefix assignment encoding are on by default (feature gates).\n" +
			"- MultiKueue: kubeconfigs with `locationType = Path` should move under `/etc/multikueue/kubeconfigs`; " +
			"`multikueue.incremental_step_size` (0.19 only) configures the incremental dispatcher.",
		Attributes: kueueAttributes(map[string]schema.Attribute{
			"integrations": schema.SetAttribute{ElementType: types.StringType, Optional: true, Computed: true,
				Default: setdefault.StaticValue(types.SetValueMust(types.StringType, []attr.Value{types.StringValue("batch/job")})),
				MarkdownDescription: "Kueue integrations (`integrations.frameworks`), e.g. `batch/job`, `jobset.x-k8s.io/jobset`, " +
					"`trainer.kubeflow.org/trainjob`, `ray.io/rayjob`, `leaderworkerset.x-k8s.io/leaderworkerset`. Default `[\"batch/job\"]`. " +
					"`pod`, `deployment` and `statefulset` are refused while Volcano is present.",
				Validators: []validator.Set{setvalidator.SizeAtLeast(1)}},
			"manage_jobs_without_queue_name": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Kueue also manages (suspends until admitted) Jobs without the `kueue.x-k8s.io/queue-name` label. Default `false`; refused while Volcano is present."},
			"feature_gates": schema.MapAttribute{ElementType: types.BoolType, Optional: true,
				MarkdownDescription: "Kueue feature gates, e.g. `{ TopologyAwareScheduling = true }` (the chart's `controllerManager.featureGates`)."},
			"replicas": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Replicas of the controller manager (the chart's default is 1).",
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
		}),
		Config: func(m *kueueModel) (helm.Config, bool) {
			return m.config(), !m.Integrations.IsUnknown() && !m.ManageJobsWithoutQueueName.IsUnknown()
		},
		FromValues: kueueFromValues,
		Validate:   validateKueue,
	})
}

func setStrings(s types.Set) []string {
	var out []string
	for _, v := range s.Elements() {
		if sv, ok := v.(types.String); ok {
			out = append(out, sv.ValueString())
		}
	}
	sort.Strings(out)
	return out
}

// config is Kueue's configuration as m sets it.
func (m *kueueModel) config() helm.KueueConfig {
	c := helm.KueueConfig{Frameworks: setStrings(m.Integrations), ManageJobsWithoutQueueName: m.ManageJobsWithoutQueueName.ValueBool()}
	m.settings(&c)
	if !m.Replicas.IsNull() {
		n := m.Replicas.ValueInt64()
		c.Replicas = &n
	}
	if !m.FeatureGates.IsNull() {
		c.FeatureGates = map[string]bool{}
		for k, v := range m.FeatureGates.Elements() {
			if b, ok := v.(types.Bool); ok {
				c.FeatureGates[k] = b.ValueBool()
			}
		}
	}
	return c
}

// kueueFromValues sets m from a release's values (import).
func kueueFromValues(values map[string]any, m *kueueModel) {
	m.Integrations = types.SetValueMust(types.StringType, []attr.Value{types.StringValue("batch/job")})
	m.ManageJobsWithoutQueueName = types.BoolValue(false)
	c, ok := helm.KueueConfigFromValues(values)
	if ok {
		vals := make([]attr.Value, len(c.Frameworks))
		for i, f := range c.Frameworks {
			vals[i] = types.StringValue(f)
		}
		m.Integrations = types.SetValueMust(types.StringType, vals)
		m.ManageJobsWithoutQueueName = types.BoolValue(c.ManageJobsWithoutQueueName)
		m.settingsFromConfig(c)
	}
	if c.Replicas != nil {
		m.Replicas = types.Int64Value(*c.Replicas)
	}
	if c.FeatureGates != nil {
		elems := map[string]attr.Value{}
		for name, on := range c.FeatureGates {
			elems[name] = types.BoolValue(on)
		}
		m.FeatureGates = types.MapValueMust(types.BoolType, elems)
	}
}

// kueueAttributes are attrs and the manager configuration's sections.
func kueueAttributes(attrs map[string]schema.Attribute) map[string]schema.Attribute {
	for k, v := range kueueSettingsAttributes() {
		attrs[k] = v
	}
	return attrs
}

func validateKueue(m *kueueModel) diag.Diagnostics {
	diags := validateSettings(m)
	if w := m.WaitForPodsReady; w != nil && !w.Enable.IsUnknown() && !w.Enable.ValueBool() && !w.Timeout.IsNull() {
		diags.AddAttributeWarning(path.Root("wait_for_pods_ready").AtName("timeout"), "Timeout without effect",
			"wait_for_pods_ready.timeout is ignored while enable = false.")
	}
	if !m.Values.IsNull() && !m.Values.IsUnknown() {
		raw, err := helm.ParseValues(m.Values.ValueString())
		if err == nil {
			if doc, ok := helm.KueueManagerConfig(raw); ok {
				if cfg, err := helm.ParseKueueManagerConfig(doc); err != nil {
					diags.AddAttributeError(path.Root("values"), "Invalid Kueue configuration",
						fmt.Sprintf("values: managerConfig.controllerManagerConfigYaml is not a YAML document: %v", err))
				} else if len(cfg.Frameworks) > 0 || cfg.ManageJobsWithoutQueueName {
					diags.AddAttributeWarning(path.Root("values"), "Settings overridden by typed attributes",
						"values: integrations.frameworks and manageJobsWithoutQueueName in managerConfig.controllerManagerConfigYaml are "+
							"replaced by the integrations and manage_jobs_without_queue_name attributes; set those instead.")
				}
			}
		}
	}
	return diags
}
