package serving

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// Plan: the checks without I/O (Validate: names, ports, the picker's flags
// and pod template), then the selector against the serving group's labels
// and the live pods (ModifyPlan).

// pickerFlags are the flags v1.6.0's picker (cmd/lwepp) accepts, read from
// its code: its server.Options, controller-runtime's zap options and
// --kubeconfig. The value says who sets it: "" the user (picker_args),
// otherwise the attribute that does, or why it is refused.
var pickerFlags = map[string]string{
	"--pool-name":             "the resource (name)",
	"--pool-namespace":        "the resource (namespace)",
	"--pool-group":            "the resource (inference.networking.k8s.io)",
	"--grpc-port":             "picker_port",
	"--grpc-health-port":      fmt.Sprintf("the resource (%d: the readiness and liveness probes)", pickerHealthPort),
	"--metrics-port":          fmt.Sprintf("the resource (%d)", pickerMetricsPort),
	"--secure-serving":        "picker_secure_serving",
	"--zap-log-level":         "picker_log_level",
	"--kubeconfig":            "the pod (in-cluster configuration with the picker's ServiceAccount)",
	"--endpoint-target-ports": "target_ports (v1.6.0's picker parses this flag but does not use it: the pool's targetPorts decide)",
	"--health-checking":       "",
	"--zap-devel":             "",
	"--zap-encoder":           "",
	"--zap-stacktrace-level":  "",
	"--zap-time-encoding":     "",
}

func validateInferencePool(m *inferencePoolModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if object.Known(m.Name) {
		// The picker's Service is <name>-epp: a DNS label of at most 63
		// characters starting with a letter.
		if n := m.Name.ValueString(); len(n)+4 > 63 || strings.Contains(n, ".") || n == "" || n[0] < 'a' || n[0] > 'z' {
			diags.AddAttributeError(path.Root("name"), "Name too long for the picker's Service",
				fmt.Sprintf("the picker's Service is named %q, which must be a DNS label (at most 63 characters, starting with a letter, no dots): "+
					"use a name of at most 59 such characters.", n+"-epp"))
		}
	}
	if object.Known(m.Port) {
		switch p := m.Port.ValueInt64(); p {
		case pickerHealthPort, pickerMetricsPort:
			diags.AddAttributeError(path.Root("picker_port"), "Picker port taken",
				fmt.Sprintf("%d is the picker's %s port; the ext-proc port must differ from %d and %d.", p,
					map[int64]string{pickerHealthPort: "gRPC health", pickerMetricsPort: "metrics"}[p], pickerHealthPort, pickerMetricsPort))
		}
	}
	for i, a := range m.Args {
		if !object.Known(a) {
			continue
		}
		p := path.Root("picker_args").AtListIndex(i)
		s := a.ValueString()
		name, _, _ := strings.Cut(s, "=")
		if !strings.HasPrefix(name, "--") {
			diags.AddAttributeError(p, "Invalid picker flag", fmt.Sprintf("%q: write each flag as --flag=value.", s))
			continue
		}
		owner, known := pickerFlags[name]
		switch {
		case !known:
			diags.AddAttributeError(p, "Unknown picker flag",
				fmt.Sprintf("%q is not a flag of the endpoint picker v1.6.0 (cmd/lwepp), which would exit at start; it accepts %s. "+
					"Scorers, a configuration file and prefill/decode settings belong to llm-d's inference scheduler, not to this picker.",
					name, strings.Join(userPickerFlags(), ", ")))
		case owner != "":
			diags.AddAttributeError(p, "Picker flag set by the resource", fmt.Sprintf("%s is set by %s; remove it from picker_args.", name, owner))
		}
	}
	if m.Template != nil {
		at := path.Root("picker_template")
		diags.Append(podtemplate.Validate(m.Template, at)...)
		for i, c := range m.Template.Containers {
			if c.Name.ValueString() != pickerContainer {
				if c.Image.IsNull() {
					diags.AddAttributeError(at.AtName("containers").AtListIndex(i).AtName("image"), "Missing image",
						fmt.Sprintf("container %q needs an image (only the picker's %q gets its image from picker_image).", c.Name.ValueString(), pickerContainer))
				}
				continue
			}
			cp := at.AtName("containers").AtListIndex(i)
			for field, set := range map[string]bool{"image": !c.Image.IsNull(), "args": c.Args != nil, "command": c.Command != nil, "ports": c.Ports != nil,
				"readiness_probe": c.ReadinessProbe != nil, "liveness_probe": c.LivenessProbe != nil} {
				if set {
					diags.AddAttributeError(cp.AtName(field), "Set by the resource",
						fmt.Sprintf("the picker container's %s comes from the picker_* attributes; remove it here.", field))
				}
			}
		}
		if object.Known(m.Template.ServiceAccountName) {
			diags.AddAttributeError(at.AtName("service_account_name"), "Set by the resource",
				"the picker runs as its own ServiceAccount (picker_name), the one its Role is bound to; remove service_account_name.")
		}
	}
	return diags
}

// userPickerFlags are the picker flags picker_args may set.
func userPickerFlags() []string {
	var out []string
	for f, owner := range pickerFlags {
		if owner == "" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// planInferencePool computes the picker's names, checks the selector
// against the serving group's pod labels and warns when no live pod
// matches it.
func planInferencePool(ctx context.Context, c *kube.Client, m *inferencePoolModel) diag.Diagnostics {
	var diags diag.Diagnostics
	m.derive()
	if c == nil || !object.Known(m.Namespace) || m.Selector.IsUnknown() {
		return diags
	}
	selector := object.Labels(m.Selector)
	ns := m.Namespace.ValueString()
	if g := m.ServingGroup; g != nil && object.Known(g.Kind) && object.Known(g.Name) {
		podLabels, from, err := servingGroupLabels(ctx, c, ns, g)
		if err != nil {
			diags.AddAttributeError(path.Root("serving_group"), "Cannot read the serving group", err.Error())
			return object.WithPaths(diags)
		}
		if podLabels != nil {
			if missing := selectorMisses(selector, podLabels); len(missing) > 0 {
				diags.AddAttributeError(path.Root("selector"), "Selector does not match the serving group",
					fmt.Sprintf("the pool would select no pod of %s %s/%s: %s. selector: %s; the group's pod labels (%s): %s.",
						g.Kind.ValueString(), ns, g.Name.ValueString(), strings.Join(missing, "; "),
						formatLabels(selector), from, formatLabels(podLabels)))
				return object.WithPaths(diags)
			}
		} else {
			diags.AddAttributeWarning(path.Root("serving_group"), "Serving group not checked",
				fmt.Sprintf("%s %s/%s does not exist yet and serving_group.labels is not set, so the selector could not be compared with its pods' labels.",
					g.Kind.ValueString(), ns, g.Name.ValueString()))
		}
	}
	pods, err := c.PodsMatching(ctx, ns, labels.SelectorFromSet(selector).String())
	if err != nil {
		diags.AddWarning("Cannot list pods", err.Error())
		return object.WithPaths(diags)
	}
	live := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live++
		}
	}
	if live == 0 {
		diags.AddAttributeWarning(path.Root("selector"), "No pod matches the selector",
			fmt.Sprintf("no pod in namespace %s has the labels %s yet: the picker has no endpoint to pick until the serving group's pods run "+
				"(and the gateway answers %s meanwhile).", ns, formatLabels(selector), map[string]string{"FailOpen": "by picking itself", "FailClose": "with errors"}[m.FailureMode.ValueString()]))
	}
	return object.WithPaths(diags)
}

// servingGroupLabels are the labels the serving group's pods carry: its
// live pod template's (for a LeaderWorkerSet, with the label its
// controller adds to every pod), else serving_group.labels; nil when
// neither is known. from says which.
func servingGroupLabels(ctx context.Context, c *kube.Client, ns string, g *poolServingGroup) (map[string]string, string, error) {
	kind, name := g.Kind.ValueString(), g.Name.ValueString()
	k, tmplPath := deploymentKind, []string{"spec", "template", "metadata", "labels"}
	if kind == "LeaderWorkerSet" {
		k, tmplPath = lwsKind, []string{"spec", "leaderWorkerTemplate", "workerTemplate", "metadata", "labels"}
	}
	live, found, err := c.Get(ctx, k, kube.Ref{Namespace: ns, Name: name})
	if err != nil && !(kind == "LeaderWorkerSet" && strings.Contains(err.Error(), "not installed")) {
		return nil, "", err
	}
	if found {
		out := map[string]string{}
		for key, v := range object.Fields(live.Object, tmplPath...) {
			out[key], _ = v.(string)
		}
		if kind == "LeaderWorkerSet" {
			out["leaderworkerset.sigs.k8s.io/name"] = name
		}
		return out, "live " + kind + " pod template", nil
	}
	if g.Labels.IsNull() || g.Labels.IsUnknown() {
		return nil, "", nil
	}
	out := object.Labels(g.Labels)
	if kind == "LeaderWorkerSet" {
		out = maps.Clone(out)
		out["leaderworkerset.sigs.k8s.io/name"] = name
	}
	return out, "serving_group.labels", nil
}

// selectorMisses lists how selector fails to match labels.
func selectorMisses(selector, labels map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(selector)) {
		v, ok := labels[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("the pods have no label %s", k))
		case v != selector[k]:
			out = append(out, fmt.Sprintf("%s is %q on the pods, %q in the selector", k, v, selector[k]))
		}
	}
	return out
}

func formatLabels(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
