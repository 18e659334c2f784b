package installs

import (
	"context"
	"fmt"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
)

type trainerModel struct {
	releaseModel
	InstallJobSet   types.Bool `tfsdk:"install_jobset"`
	DefaultRuntimes types.Bool `tfsdk:"default_runtimes"`
}

// NewTrainer is aiplatform_trainer: a Helm release plus Trainer's default
// runtimes, which the provider applies itself (the chart's hook Jobs that
// would need internet access are never rendered) in the release's hooks:
// applied after the release, compared at every refresh (their drift is part
// of `drift`), deleted before it.
func NewTrainer() resource.Resource { return newRelease[trainerModel](trainerSpec) }

var trainerSpec = chartSpec[trainerModel]{
	TypeName: "trainer",
	Chart:    helm.Trainer,
	Description: "Kubeflow Trainer (the TrainJob, TrainingRuntime and ClusterTrainingRuntime CRDs, its controller manager and " +
		"webhooks) installed from its Helm chart with the Helm SDK. Install and upgrade are atomic and wait until every object is " +
		"ready; every refresh compares each object of the release — and the default runtimes when `default_runtimes` is set — with " +
		"the live cluster (`drift`). Chart settings go in `values`.\n\n" +
		"**JobSet**: Trainer runs every TrainJob as a JobSet. Its chart depends on JobSet's chart from the OCI registry " +
		"`registry.k8s.io/jobset/charts` (`jobset.install`); this resource installs the Trainer without it (`install_jobset = false`) " +
		"and the plan fails unless the cluster serves JobSet's API or an `aiplatform_jobset_controller` is planned before it — give the " +
		"Trainer `depends_on = [aiplatform_jobset_controller.<name>]`. With registry access you may instead use the upstream chart " +
		"as published (`oci://ghcr.io/kubeflow/charts/kubeflow-trainer`, which bundles JobSet 0.12.0) with `install_jobset = true` " +
		"and no `aiplatform_jobset_controller`: JobSet then runs in the Trainer's namespace as part of its release. A chart directory " +
		"without `charts/jobset` (the module's, or a source checkout before `helm dependency build`) cannot install JobSet and is " +
		"refused with `install_jobset = true`. One JobSet and one Trainer per cluster: the plan fails on a second of either.\n\n" +
		"**Default runtimes**: the chart applies its default ClusterTrainingRuntimes (`torch-distributed`, `deepspeed-distributed`, " +
		"`mlx-distributed`, `jax-distributed`, `xgboost-distributed` and the torchtune ones) with a post-install hook Job that " +
		"installs kubectl from the internet (`docker.io/alpine`, `apk add kubectl`), and removes them with a pre-delete hook Job of " +
		"the same kind. This resource renders the same runtimes from the chart (`runtimes.defaultEnabled`) and applies them itself " +
		"when `default_runtimes = true`, labelled `trainer.kubeflow.org/managed-by=runtimes-installer` as the chart's installer does; " +
		"the chart's runtime switches in `values` are refused.\n\n" +
		"The default chart is the upstream OCI chart `oci://ghcr.io/kubeflow/charts/kubeflow-trainer`, whose versions are the Trainer " +
		"releases without the `v` (`2.3.0`). The provider's tests install the same chart from the `github.com/kubeflow/trainer/v2` " +
		"v2.3.0 module (`charts/kubeflow-trainer`, also `2.3.0`, without its dependencies); the registry itself was not reached offline.",
	Attributes: map[string]schema.Attribute{
		"install_jobset": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Install JobSet as the chart's subchart (`jobset.install`), in this release. Needs a chart that carries " +
				"JobSet's chart (the upstream OCI chart does). Default `false`: JobSet comes from `aiplatform_jobset_controller` or is " +
				"already in the cluster."},
		"default_runtimes": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Apply the chart's default ClusterTrainingRuntimes (what `runtimes.defaultEnabled` selects), rendered " +
				"from the chart, after the release, and delete them when it is set back to `false` or the release is destroyed. " +
				"Default `false` (the chart's default)."},
	},
	Config: func(m *trainerModel) (helm.Config, bool) {
		return helm.TrainerConfig{InstallJobSet: m.InstallJobSet.ValueBool()}, !m.InstallJobSet.IsUnknown()
	},
	FromValues: func(values map[string]any, m *trainerModel) {
		m.InstallJobSet = types.BoolValue(helm.TrainerConfigFromValues(values).InstallJobSet)
		m.DefaultRuntimes = types.BoolValue(false) // set from the cluster by Read
	},
	Validate: validateTrainer,
	Hooks: hooks[trainerModel]{
		Check: checkTrainerChart,
		After: func(ctx context.Context, c *kube.Client, m, prior *trainerModel) diag.Diagnostics {
			switch {
			case m.DefaultRuntimes.ValueBool():
				return trainerRuntimes(ctx, c, m, true)
			case prior != nil && prior.DefaultRuntimes.ValueBool():
				return trainerRuntimes(ctx, c, m, false)
			}
			return nil
		},
		Refresh: refreshTrainerRuntimes,
		BeforeDelete: func(ctx context.Context, c *kube.Client, m *trainerModel) diag.Diagnostics {
			if m.DefaultRuntimes.ValueBool() {
				return trainerRuntimes(ctx, c, m, false)
			}
			return nil
		},
	},
}

func validateTrainer(m *trainerModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Values.IsNull() || m.Values.IsUnknown() {
		return diags
	}
	raw, err := helm.ParseValues(m.Values.ValueString())
	if err != nil {
		return diags // reported by the generic validation
	}
	if toggles := helm.TrainerRuntimeToggles(raw); len(toggles) > 0 {
		diags.AddAttributeError(path.Root("values"), "Trainer runtimes set in values",
			fmt.Sprintf("values: %s switch on the chart's built-in runtimes, which the chart applies with a hook Job that installs kubectl "+
				"from the internet (docker.io/alpine, apk) and deletes with another. Remove them and set default_runtimes = true: the "+
				"provider renders the chart's default runtimes and applies them itself. (Single runtimes are not selectable here; create "+
				"others as ClusterTrainingRuntimes of your own.)", strings.Join(toggles, ", ")))
	}
	if _, ok := helm.GetPath(raw, "jobset", "install").(bool); ok {
		diags.AddAttributeWarning(path.Root("values"), "Setting overridden by a typed attribute",
			"values: jobset.install is replaced by the install_jobset attribute; set that instead.")
	}
	if on, _ := helm.GetPath(raw, "dataCache", "enabled").(bool); on {
		if lws, ok := helm.GetPath(raw, "dataCache", "lws", "install").(bool); !ok || lws {
			diags.AddAttributeWarning(path.Root("values"), "Data cache needs LeaderWorkerSet",
				"values: dataCache.enabled installs LeaderWorkerSet as a subchart (dataCache.lws.install, default true), which only a chart "+
					"that bundles LWS's chart carries (the upstream OCI chart does; a chart directory without charts/lws installs no LWS). "+
					"Without registry access set dataCache.lws.install = false and install LWS with aiplatform_lws_controller.")
		}
	}
	return diags
}

// checkTrainerChart refuses install_jobset with a chart that cannot install
// JobSet: Helm's SDK would install the release without it, silently.
func checkTrainerChart(m *trainerModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.InstallJobSet.ValueBool() {
		return diags
	}
	src := chartSource(helm.Trainer, &m.releaseModel)
	ch, err := helm.LoadChart(src)
	if err != nil {
		diags.AddAttributeError(path.Root("chart"), "Cannot load the Kubeflow Trainer chart", err.Error())
		return diags
	}
	if !helm.HasDependency(ch, "jobset") {
		diags.AddAttributeError(path.Root("install_jobset"), "The chart carries no JobSet",
			fmt.Sprintf("install_jobset = true, but chart %s (%s %s) has no JobSet subchart in charts/: Helm would install the Trainer "+
				"without JobSet. Use the published chart (oci://ghcr.io/kubeflow/charts/kubeflow-trainer), run `helm dependency build` in "+
				"the chart directory, or set install_jobset = false and add an aiplatform_jobset_controller.",
				src, ch.Metadata.Name, ch.Metadata.Version))
	}
	return diags
}

// trainerRuntimes applies (or deletes) the release's default runtimes.
func trainerRuntimes(ctx context.Context, c *kube.Client, m *trainerModel, apply bool) diag.Diagnostics {
	var diags diag.Diagnostics
	rel := handle(ctx, c, &m.releaseModel)
	objs, found, err := rel.TrainerRuntimes(ctx)
	switch {
	case err == nil && !found && apply:
		err = fmt.Errorf("release %s is not installed", rel.ID())
	case err == nil && !found:
		return diags // uninstalled already: nothing to render the runtimes from
	case err == nil:
		if apply {
			err = rel.ApplyRuntimes(ctx, objs)
		} else {
			err = rel.DeleteRuntimes(ctx, objs)
		}
	}
	if err != nil {
		verb := "Applying"
		if !apply {
			verb = "Deleting"
		}
		diags.AddAttributeError(path.Root("default_runtimes"), verb+" the default runtimes failed",
			fmt.Sprintf("Release %s is in place, but: %v", rel.ID(), err))
	}
	return diags
}

// refreshTrainerRuntimes adds the default runtimes' drift to m's (import:
// sets default_runtimes from whether they are there).
func refreshTrainerRuntimes(ctx context.Context, c *kube.Client, m *trainerModel, importing bool) diag.Diagnostics {
	var diags diag.Diagnostics
	if !importing && !m.DefaultRuntimes.ValueBool() {
		return diags
	}
	rel := handle(ctx, c, &m.releaseModel)
	objs, found, err := rel.TrainerRuntimes(ctx)
	if err != nil || !found {
		if err != nil && !importing {
			diags.AddAttributeError(path.Root("default_runtimes"), "Cannot render the default runtimes", err.Error())
		}
		return diags
	}
	lines, present, unchecked := rel.RuntimesDrift(ctx, objs)
	if importing {
		m.DefaultRuntimes = types.BoolValue(present > 0)
		if present == 0 {
			return diags
		}
	}
	for _, u := range unchecked {
		diags.AddWarning(fmt.Sprintf("A default runtime of release %s could not be checked for drift", rel.ID()), u)
	}
	all := make([]string, 0, len(m.Drift.Elements())+len(lines))
	for _, v := range m.Drift.Elements() {
		if s, ok := v.(types.String); ok {
			all = append(all, s.ValueString())
		}
	}
	all = append(all, lines...)
	sort.Strings(all)
	m.Drift = stringList(all)
	return diags
}
