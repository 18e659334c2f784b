package serving

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
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
	// The selector against the serving group's pod labels, as planned in
	// this run, else live, else serving_group.labels (internal/rules).
	if diags.Append(rules.Plan(ctx, c, inferencePoolFact(m))...); diags.HasError() {
		return object.WithPaths(diags)
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
				"(and the gateway answers %s meanwhile).", ns, rules.FormatLabels(selector), map[string]string{"FailOpen": "by picking itself", "FailClose": "with errors"}[m.FailureMode.ValueString()]))
	}
	return object.WithPaths(diags)
}
