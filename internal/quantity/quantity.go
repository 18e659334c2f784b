// Package quantity parses Kubernetes quantities from user input with bounds
// apimachinery lacks: pure, no I/O and no Terraform, so the sizing math and
// the plan-time validators share it.
package quantity

import (
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityPattern is the grammar the API server enforces for quantities in CRDs
// (resource.ParseQuantity alone accepts a bare suffix such as "Gi"); group 1
// is the exponent of the 1e3 form.
var quantityPattern = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE]([+-]?[0-9]+))?$`)

// maxExponent bounds the 1e3 form before apimachinery sees it: it expands the
// exponent with big integers, and "8e22222222222" never returns (found by
// validators.FuzzParseQuantity).
const maxExponent = 30

// The largest quantity whose thousandths fit in an int64 (about 8 Pi); past it
// apimachinery's formatting loses digits (found by validators.FuzzParseQuantity).
var (
	maxQuantity = resource.MustParse("9223372036854775")
	minQuantity = resource.MustParse("-9223372036854775")
)

// Parse parses a quantity with an error message that says what is wrong.
func Parse(s string) (resource.Quantity, error) {
	m := quantityPattern.FindStringSubmatch(s)
	if m == nil {
		return resource.Quantity{}, fmt.Errorf("quantities are a number with an optional suffix (m, k, M, G, Ki, Mi, Gi, …)")
	}
	if m[1] != "" {
		if e, err := strconv.Atoi(m[1]); err != nil || e > maxExponent || e < -maxExponent {
			return resource.Quantity{}, fmt.Errorf("exponent %s is out of range (at most ±%d)", m[1], maxExponent)
		}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("quantities are a number with an optional suffix (m, k, M, G, Ki, Mi, Gi, …)")
	}
	if q.CmpInt64(0) > 0 && q.Cmp(maxQuantity) > 0 || q.CmpInt64(0) < 0 && q.Cmp(minQuantity) < 0 {
		return resource.Quantity{}, fmt.Errorf("at most %s in absolute value (Kubernetes and Kueue count in 64-bit thousandths)", maxQuantity.String())
	}
	return q, nil
}
