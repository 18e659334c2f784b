package kueue

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// A ClusterQueue's admission checks are one list in Kueue
// (spec.admissionChecksStrategy.admissionChecks: name and optional
// onFlavors); the schema offers it as a plain list of names
// (admission_checks) or as rules per flavor (admission_checks_strategy).

type admissionRule struct {
	Name      types.String   `tfsdk:"name"`
	OnFlavors []types.String `tfsdk:"on_flavors"`
}

func admissionChecksStrategyAttribute() schema.Attribute {
	return schema.ListNestedAttribute{
		Optional: true,
		MarkdownDescription: "AdmissionChecks with the flavors they apply to: a workload runs a check only when it is assigned one " +
			"of the check's `on_flavors` (every flavor when `on_flavors` is unset). Instead of `admission_checks`.",
		Validators: []validator.List{listvalidator.SizeBetween(1, 64)},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "AdmissionCheck name.",
				Validators: []validator.String{validators.DNSSubdomain()}},
			"on_flavors": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "ResourceFlavors (of this queue's `resource_groups`) for which the check runs.",
				Validators: []validator.List{listvalidator.SizeBetween(1, 64), listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(validators.DNSSubdomain())},
			},
		}},
	}
}

func admissionChecksOut(spec map[string]any, names []types.String, rules []admissionRule) {
	var checks []any
	for _, n := range names {
		checks = append(checks, map[string]any{"name": n.ValueString()})
	}
	for _, r := range rules {
		c := map[string]any{"name": r.Name.ValueString()}
		object.Put(c, "onFlavors", object.ListOut(r.OnFlavors))
		checks = append(checks, c)
	}
	if len(checks) > 0 {
		spec["admissionChecksStrategy"] = map[string]any{"admissionChecks": checks}
	}
}

// admissionChecksIn reads the live checks into the spelling the prior value
// used: rules when the configuration used them or when a live check is
// limited to some flavors (which a list of names cannot say), else names.
func admissionChecksIn(live []map[string]any, priorNames []types.String, priorRules []admissionRule) ([]types.String, []admissionRule) {
	asRules := priorRules != nil
	for _, c := range live {
		if len(object.List(c, "onFlavors")) > 0 {
			asRules = true
		}
	}
	if len(live) == 0 {
		return object.EmptyOrNil(priorNames), object.EmptyOrNil(priorRules)
	}
	if !asRules {
		names := make([]types.String, len(live))
		for i, c := range live {
			names[i] = object.String(c["name"], types.StringNull())
		}
		return names, nil
	}
	rules := make([]admissionRule, len(live))
	for i, c := range live {
		var prior []types.String
		if i < len(priorRules) {
			prior = priorRules[i].OnFlavors
		}
		rules[i] = admissionRule{Name: object.String(c["name"], types.StringNull()), OnFlavors: object.StringList(c["onFlavors"], prior)}
	}
	return nil, rules
}

// validateChecksStrategy refuses a check named twice (Kueue keys the list by
// name) and warns about on_flavors naming a flavor the queue has no quota
// for: such a rule never applies.
func validateChecksStrategy(rules []admissionRule, groups []resourceGroup) diag.Diagnostics {
	var diags diag.Diagnostics
	flavors := map[string]bool{}
	for _, g := range groups {
		for _, f := range g.Flavors {
			if !object.Known(f.Name) {
				return diags // not checkable yet; an unknown flavor may be any
			}
			flavors[f.Name.ValueString()] = true
		}
	}
	seen := map[string]int{}
	for i, r := range rules {
		p := path.Root("admission_checks_strategy").AtListIndex(i)
		if object.Known(r.Name) {
			if j, dup := seen[r.Name.ValueString()]; dup {
				diags.AddAttributeError(p.AtName("name"), "AdmissionCheck listed twice",
					fmt.Sprintf("%q is already admission_checks_strategy[%d]: Kueue keeps one rule per check; list all its flavors in one on_flavors.", r.Name.ValueString(), j))
			}
			seen[r.Name.ValueString()] = i
		}
		for j, f := range r.OnFlavors {
			if object.Known(f) && !flavors[f.ValueString()] {
				diags.AddAttributeWarning(p.AtName("on_flavors").AtListIndex(j), "Flavor not in this queue",
					fmt.Sprintf("flavor %q is not among this queue's resource_groups flavors: no workload of this queue is assigned it, so the check never runs for it.", f.ValueString()))
			}
		}
	}
	return diags
}
