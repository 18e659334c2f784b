package kueue

import (
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// quantities parses two known quantities; ok is false if either is null, unknown or invalid.
func quantities(a, b types.String) (qa, qb resource.Quantity, ok bool) {
	if a.IsNull() || a.IsUnknown() || b.IsNull() || b.IsUnknown() {
		return qa, qb, false
	}
	qa, errA := validators.ParseQuantity(a.ValueString())
	qb, errB := validators.ParseQuantity(b.ValueString())
	return qa, qb, errA == nil && errB == nil
}

func names(l []types.String) string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = v.ValueString()
	}
	return strings.Join(s, ", ")
}
