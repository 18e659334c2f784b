// Package validators holds plan-time attribute validators for Kubernetes values:
// names, label keys and values, quantities. They run without any I/O, so bad
// input fails at `terraform plan` with the attribute path and changes nothing.
package validators

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/quantity"
)

type stringCheck struct {
	desc  string
	check func(string) []string
}

func (v stringCheck) Description(context.Context) string         { return v.desc }
func (v stringCheck) MarkdownDescription(context.Context) string { return v.desc }

func (v stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if errs := v.check(req.ConfigValue.ValueString()); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value",
			fmt.Sprintf("%s: %q is not %s: %s", req.Path, req.ConfigValue.ValueString(), v.desc, strings.Join(errs, "; ")))
	}
}

// DNSSubdomain accepts a DNS-1123 subdomain (most object names).
func DNSSubdomain() validator.String {
	return stringCheck{"a valid DNS-1123 subdomain (lower case alphanumerics, '-' and '.', at most 253 characters)", validation.IsDNS1123Subdomain}
}

// DNSLabel accepts a DNS-1123 label (namespaces).
func DNSLabel() validator.String {
	return stringCheck{"a valid DNS-1123 label (lower case alphanumerics and '-', at most 63 characters)", validation.IsDNS1123Label}
}

// QualifiedName accepts a label key or resource name such as nvidia.com/gpu.
func QualifiedName() validator.String {
	return stringCheck{"a valid qualified name (optional DNS prefix and '/', then at most 63 alphanumerics, '-', '_' or '.')", validation.IsQualifiedName}
}

// LabelValue accepts a label value.
func LabelValue() validator.String {
	return stringCheck{"a valid label value (at most 63 alphanumerics, '-', '_' or '.', empty allowed)", validation.IsValidLabelValue}
}

// Quantity accepts a non-negative Kubernetes quantity such as "8", "500m", "64Gi".
func Quantity() validator.String {
	return stringCheck{"a non-negative Kubernetes quantity (e.g. \"8\", \"500m\", \"64Gi\")", func(s string) []string {
		q, err := ParseQuantity(s)
		if err != nil {
			return []string{err.Error()}
		}
		if q.Sign() < 0 {
			return []string{"must not be negative"}
		}
		return nil
	}}
}

// ParseQuantity parses a quantity with an error message that says what is
// wrong, within the bounds Kubernetes can represent (see quantity.Parse).
func ParseQuantity(s string) (resource.Quantity, error) { return quantity.Parse(s) }

type labelMap struct{}

// Labels accepts a map whose keys are qualified names and values label values.
func Labels() validator.Map { return labelMap{} }

func (labelMap) Description(context.Context) string {
	return "keys must be valid label keys and values valid label values"
}
func (v labelMap) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (labelMap) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for k, v := range req.ConfigValue.Elements() {
		p := req.Path.AtMapKey(k)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(p, "Invalid label key", fmt.Sprintf("%s: %q: %s", req.Path, k, strings.Join(errs, "; ")))
		}
		s, ok := v.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if errs := validation.IsValidLabelValue(s.ValueString()); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(p, "Invalid label value", fmt.Sprintf("%s: %q: %s", p, s.ValueString(), strings.Join(errs, "; ")))
		}
	}
}
