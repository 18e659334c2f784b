package kueue

import (
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type admissionCheckModel struct {
	object.ClusterMeta
	object.LiveChanges
	ControllerName types.String   `tfsdk:"controller_name"`
	Parameters     *parametersRef `tfsdk:"parameters"`
}

type parametersRef struct {
	APIGroup types.String `tfsdk:"api_group"`
	Kind     types.String `tfsdk:"kind"`
	Name     types.String `tfsdk:"name"`
}

// The controllers Kueue ships and the parameters object each one reads.
var builtinCheckParameters = map[string]string{
	"kueue.x-k8s.io/provisioning-request": "ProvisioningRequestConfig",
	"kueue.x-k8s.io/multikueue":           "MultiKueueConfig",
}

var kindPattern = regexp.MustCompile(`^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$`)

// NewAdmissionCheck is aiplatform_admission_check.
func NewAdmissionCheck() resource.Resource {
	return object.New[admissionCheckModel](object.Spec[admissionCheckModel]{
		TypeName: "admission_check",
		Kind:     admissionCheckKind,
		Description: "A Kueue AdmissionCheck: a gate a workload must pass, besides quota, before Kueue admits it — " +
			"cluster-autoscaler provisioning (`kueue.x-k8s.io/provisioning-request`), dispatch to another cluster " +
			"(`kueue.x-k8s.io/multikueue`) or a controller of your own. A ClusterQueue lists it in `admission_checks` or " +
			"`admission_checks_strategy`; while the check's controller has not marked it Active the queue admits nothing.",
		Attributes: map[string]schema.Attribute{
			"controller_name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The controller that runs this check, e.g. `kueue.x-k8s.io/provisioning-request`. " +
					"Kueue makes it immutable: changing it replaces the AdmissionCheck.",
				Validators:    []validator.String{stringvalidator.LengthBetween(1, 253)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"parameters": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "The object holding the check's settings, e.g. a ProvisioningRequestConfig.",
				Attributes: map[string]schema.Attribute{
					"api_group": schema.StringAttribute{Required: true, MarkdownDescription: "API group, e.g. `kueue.x-k8s.io`.",
						Validators: []validator.String{validators.DNSSubdomain()}},
					"kind": schema.StringAttribute{Required: true, MarkdownDescription: "Kind, e.g. `ProvisioningRequestConfig`.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 63),
							stringvalidator.RegexMatches(kindPattern, "must start with a letter and contain only letters, digits and '-'")}},
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the (cluster-scoped) object.",
						Validators: []validator.String{validators.DNSLabel()}},
				},
			},
		},
		Fields: func(m *admissionCheckModel) map[string]any {
			spec := map[string]any{}
			object.Put(spec, "controllerName", m.ControllerName)
			if p := m.Parameters; p != nil {
				spec["parameters"] = map[string]any{"apiGroup": p.APIGroup.ValueString(), "kind": p.Kind.ValueString(), "name": p.Name.ValueString()}
			}
			return map[string]any{"spec": spec}
		},
		Read: func(live map[string]any, m *admissionCheckModel) {
			spec := object.Fields(live, "spec")
			m.ControllerName = object.String(spec["controllerName"], m.ControllerName)
			if p := object.Fields(spec, "parameters"); p != nil {
				m.Parameters = &parametersRef{
					APIGroup: object.String(p["apiGroup"], types.StringNull()),
					Kind:     object.String(p["kind"], types.StringNull()),
					Name:     object.String(p["name"], types.StringNull()),
				}
			} else {
				m.Parameters = nil
			}
		},
		Validate: func(m *admissionCheckModel) diag.Diagnostics {
			var diags diag.Diagnostics
			want, builtin := builtinCheckParameters[m.ControllerName.ValueString()]
			p := m.Parameters
			if !builtin || p == nil || !object.Known(p.APIGroup) || !object.Known(p.Kind) {
				return diags
			}
			if p.APIGroup.ValueString() != group || p.Kind.ValueString() != want {
				diags.AddAttributeError(path.Root("parameters"), "Parameters of the wrong kind",
					fmt.Sprintf("controller %s reads its parameters from a %s.%s, not a %s.%s.",
						m.ControllerName.ValueString(), want, group, p.Kind.ValueString(), p.APIGroup.ValueString()))
			}
			return diags
		},
	})
}
