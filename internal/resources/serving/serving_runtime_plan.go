package serving

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// Plan: the model server's checks are the model deployment's (run on
// m.server()), then what KServe itself would refuse or ignore.

// runtimePodFields are the pod fields a ServingRuntimePodSpec has (KServe
// v0.20's CRD); anything else the API server would prune silently.
var runtimePodFields = map[string]bool{"containers": true, "volumes": true, "nodeSelector": true, "affinity": true, "tolerations": true,
	"imagePullSecrets": true, "schedulerName": true, "hostIPC": true}

// notInRuntime names, for the typed template attributes a ServingRuntime
// cannot carry, where they go instead.
var notInRuntime = []struct {
	attr  string
	set   func(t *podtemplate.Template) bool
	where string
}{
	{"init_containers", func(t *podtemplate.Template) bool { return len(t.InitContainers) > 0 }, "the InferenceService's predictor (initContainers) or its storage initializer"},
	{"service_account_name", func(t *podtemplate.Template) bool { return !t.ServiceAccountName.IsNull() }, "the InferenceService's spec.predictor.serviceAccountName"},
	{"priority_class_name", func(t *podtemplate.Template) bool { return !t.PriorityClassName.IsNull() }, "the InferenceService's spec.predictor.priorityClassName"},
	{"runtime_class_name", func(t *podtemplate.Template) bool { return !t.RuntimeClassName.IsNull() }, "the InferenceService's spec.predictor.runtimeClassName"},
	{"security_context", func(t *podtemplate.Template) bool { return t.SecurityContext != nil }, "the InferenceService's spec.predictor.securityContext (a container's security_context is kept)"},
}

// kserveModelDir is where KServe mounts a predictor's model
// (constants.DefaultModelLocalMountPath), checked against the pod by the
// test environment's KServe manager: a cache mounted there too is refused
// by the API server.
const kserveModelDir = "/mnt/models"

func validateServingRuntime(m *servingRuntimeModel) diag.Diagnostics {
	d := m.server()
	d.Name = types.StringNull() // no Service of the runtime's name
	if d.Container.IsNull() {
		d.Container = types.StringValue(runtimeContainer) // the default, not applied yet
	}
	diags := validateModelDeployment(d)
	diags.Append(validateFormats(m.ModelFormats)...)
	if c := m.ModelCache; c != nil && object.Known(c.MountPath) && strings.TrimRight(c.MountPath.ValueString(), "/") == kserveModelDir {
		diags.AddAttributeError(path.Root("model_cache").AtName("mount_path"), "Mount path taken by KServe",
			"model_cache.mount_path: KServe mounts its own model directory at "+kserveModelDir+" in every predictor pod (the storage "+
				"initializer's download or, without storageUri, the model agent's); a second mount at that path makes the pod invalid "+
				"(\"must be unique\") and the predictor's Deployment never gets a pod. Mount the cache elsewhere, e.g. /mnt/model-cache, "+
				"and point the server's --model there.")
	}
	if t := m.Template; t != nil {
		at := path.Root("template")
		for _, f := range notInRuntime {
			if f.set(t) {
				diags.AddAttributeError(at.AtName(f.attr), "Not a serving runtime field",
					fmt.Sprintf("a ServingRuntime's pod spec has no %s (KServe's CRD would drop it); set it on %s.", f.attr, f.where))
			}
		}
		if object.Known(t.PodTemplate) {
			if doc, err := podtemplate.Decode[corev1.PodTemplateSpec](t.PodTemplate.ValueString()); err == nil {
				diags.Append(checkRuntimeOverlay(doc, at.AtName("pod_template"))...)
			}
		}
	}
	return diags
}

// checkRuntimeOverlay refuses overlay fields a ServingRuntimePodSpec lacks.
func checkRuntimeOverlay(doc map[string]any, p path.Path) diag.Diagnostics {
	var diags diag.Diagnostics
	var bad []string
	for k := range object.Fields(doc, "spec") {
		if !runtimePodFields[k] {
			bad = append(bad, "spec."+k)
		}
	}
	for k := range object.Fields(doc, "metadata") {
		if k != "labels" && k != "annotations" {
			bad = append(bad, "metadata."+k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		keys := make([]string, 0, len(runtimePodFields))
		for k := range runtimePodFields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		diags.AddAttributeError(p, "Not a serving runtime field",
			fmt.Sprintf("a ServingRuntime's pod spec has no %s (KServe's CRD would drop it); it has %s, labels and annotations. "+
				"Set the rest on the InferenceService's predictor.", strings.Join(bad, ", "), strings.Join(keys, ", ")))
	}
	return diags
}

// validateFormats applies what KServe's runtime webhook and selection
// assume of spec.supportedModelFormats.
func validateFormats(formats []runtimeFormat) diag.Diagnostics {
	var diags diag.Diagnostics
	seen := map[string]int{}
	priority := map[string]int{}
	for i, f := range formats {
		p := path.Root("supported_model_formats").AtListIndex(i)
		if !object.Known(f.Name) || f.Version.IsUnknown() || f.AutoSelect.IsUnknown() || f.Priority.IsUnknown() {
			continue
		}
		name := strings.ToLower(f.Name.ValueString())
		key := name + "@" + f.Version.ValueString()
		if j, dup := seen[key]; dup {
			diags.AddAttributeError(p, "Duplicate model format",
				fmt.Sprintf("format %q version %q is already listed at supported_model_formats[%d] (KServe compares names case-insensitively).",
					f.Name.ValueString(), f.Version.ValueString(), j))
		}
		seen[key] = i
		if !f.Priority.IsNull() && !f.AutoSelect.ValueBool() {
			diags.AddAttributeError(p.AtName("priority"), "Priority without auto_select",
				fmt.Sprintf("priority %d only orders runtimes KServe selects automatically; set auto_select = true or remove priority.", f.Priority.ValueInt64()))
		}
		if f.AutoSelect.ValueBool() && !f.Priority.IsNull() {
			if j, ok := priority[name]; ok && formats[j].Priority.ValueInt64() != f.Priority.ValueInt64() {
				diags.AddAttributeError(p.AtName("priority"), "Two priorities for one format",
					fmt.Sprintf("format %q has priority %d here and %d at supported_model_formats[%d]; KServe's webhook refuses a runtime whose "+
						"auto-selected format has two priorities.", f.Name.ValueString(), f.Priority.ValueInt64(), formats[j].Priority.ValueInt64(), j))
			} else if !ok {
				priority[name] = i
			}
		}
	}
	return diags
}

// noModelThreshold is the startup probe's failure threshold without a
// model: the budget of a model that loads instantly, (0 + 60 s) × 2.
func noModelThreshold() int64 {
	b, _ := capacity.StartupProbeBudget(capacity.Startup{ModelBytes: 0, BytesPerSecond: 1, PeriodSeconds: startupPeriod})
	return int64(b.FailureThreshold)
}

// planServingRuntime runs the model deployment's plan on the runtime's
// server (GPU memory from the nodes, GPUs per node, fit, probes), then
// refuses a format priority another live runtime already holds.
func planServingRuntime(ctx context.Context, c *kube.Client, m *servingRuntimeModel) diag.Diagnostics {
	m.Kind = types.StringValue(ClusterServingRuntimeKind.Kind)
	if !m.Namespace.IsNull() {
		m.Kind = types.StringValue(ServingRuntimeKind.Kind)
	}
	if m.Model == nil && m.GPUMemory.IsUnknown() {
		m.GPUMemory = types.StringNull() // nothing to size
	}
	d := m.server()
	diags := planModelDeployment(ctx, c, d)
	if diags.HasError() {
		return diags
	}
	m.fromServer(d)
	if m.Model == nil {
		m.Fit, m.MaxConcurrency, m.EstimatedLoadSeconds = types.StringNull(), types.Int64Null(), types.Int64Null()
		m.StartupFailureThreshold = types.Int64Value(noModelThreshold())
		diags.AddAttributeWarning(path.Root("model"), "Startup probe not sized",
			fmt.Sprintf("model: without the model's size the startup probe allows %d s, enough only for a server that loads at once; "+
				"a larger model is restarted before it has loaded. Set model (model_bytes, context_length, kv_cache_bytes_per_token) to size it.",
				noModelThreshold()*startupPeriod))
	}
	if c != nil {
		diags.Append(checkPriorityConflicts(ctx, c, m)...)
	}
	return object.WithPaths(diags)
}

// checkPriorityConflicts refuses what KServe's webhook would: another
// enabled runtime of the same scope and namespace, sharing a protocol, that
// auto-selects a format of the same name and version with the same priority.
func checkPriorityConflicts(ctx context.Context, c *kube.Client, m *servingRuntimeModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Disabled.ValueBool() || !object.Known(m.Name) || m.Namespace.IsUnknown() {
		return diags
	}
	kind, ns := ClusterServingRuntimeKind, ""
	if !m.Namespace.IsNull() {
		kind, ns = ServingRuntimeKind, m.Namespace.ValueString()
	}
	if served, err := c.Served(ctx, kind); err != nil || !served {
		return diags // planned with aiplatform_kserve: nothing to conflict with yet
	}
	others, err := c.List(ctx, kind, ns)
	if err != nil {
		return diags
	}
	mine := protocolsOf(m.ProtocolVersions)
	for _, o := range others {
		spec := object.Fields(o.Object, "spec")
		if o.GetName() == m.Name.ValueString() || spec["disabled"] == true || (spec["multiModel"] == true) != m.MultiModel.ValueBool() {
			continue
		}
		theirs := map[string]bool{}
		for _, p := range object.List(spec, "protocolVersions") {
			theirs[fmt.Sprint(p)] = true
		}
		if len(theirs) == 0 {
			theirs["v1"] = true
		}
		shared := false
		for p := range mine {
			shared = shared || theirs[p]
		}
		if !shared {
			continue
		}
		for _, f := range object.Items(spec, "supportedModelFormats") {
			if f["autoSelect"] != true || f["priority"] == nil {
				continue
			}
			for i, mf := range m.ModelFormats {
				if !mf.AutoSelect.ValueBool() || !object.Known(mf.Priority) || !strings.EqualFold(fmt.Sprint(f["name"]), mf.Name.ValueString()) ||
					fmt.Sprint(object.String(f["version"], types.StringNull()).ValueString()) != mf.Version.ValueString() ||
					object.Int64(f["priority"]).ValueInt64() != mf.Priority.ValueInt64() {
					continue
				}
				diags.AddAttributeError(path.Root("supported_model_formats").AtListIndex(i).AtName("priority"), "Priority already taken",
					fmt.Sprintf("%s %q already auto-selects format %q with priority %d for a protocol this runtime speaks too; KServe's webhook refuses "+
						"two such runtimes (it could not choose). Give this runtime another priority, or disable one of them.",
						kind.Kind, o.GetName(), mf.Name.ValueString(), mf.Priority.ValueInt64()))
			}
		}
	}
	return diags
}

func protocolsOf(vs []types.String) map[string]bool {
	out := map[string]bool{}
	for _, v := range vs {
		out[v.ValueString()] = true
	}
	if len(out) == 0 {
		out["v1"] = true
	}
	return out
}
