package kube

import (
	"encoding/json"
	"math"
	"net/http"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What one request through a webhook tells (WaitWebhooks): the pure part,
// the classification of the API server's answer and the minimal objects
// sent, apart from the requests so it can be unit tested.

// probeKind is which of its webhooks a request is meant to go through.
type probeKind int

const (
	mutatingProbe probeKind = iota
	validatingProbe
	conversionProbe
)

func (k probeKind) String() string {
	switch k {
	case mutatingProbe:
		return "mutating webhook"
	case validatingProbe:
		return "validating webhook"
	}
	return "conversion webhook"
}

// verdict is what a probe's result says about its webhook.
type verdict int

const (
	// answered: the webhook answered, allowing or denying.
	answered verdict = iota
	// notYet: the API server could not call the webhook (or one it calls
	// before): no endpoints, connection refused, a 5xx, a timeout. Retried.
	notYet
	// blocked: the request stopped before it got to the webhook for a reason
	// retrying this object will not change (another webhook denied it, the
	// object is invalid before the validating webhooks run, the provider may
	// not create it): the next object is tried, if any.
	blocked
)

func (v verdict) String() string {
	return [...]string{"answered", "not answering yet", "blocked before the webhook"}[v]
}

// classifyProbe reads the error of a dry-run create (or, for a conversion
// webhook, a list) meant to go through the webhook named webhook (for
// conversion webhooks, any name). The API server handles a create in this
// order: mutating webhooks, validation (a custom resource's schema),
// validating webhooks, then storage, where a dry run encodes the object at
// the storage version — through a CRD's conversion webhook.
func classifyProbe(err error, webhook string, kind probeKind) verdict {
	if err == nil {
		return answered
	}
	msg := err.Error()
	// A webhook's denial may carry any code, 500 included (controller-
	// runtime's admission.Errored): the webhook answered all the same.
	if denier, ok := deniedBy(msg); ok {
		if kind != conversionProbe && denier == webhook {
			return answered
		}
		return blocked
	}
	switch {
	case strings.Contains(msg, "failed calling webhook"),
		strings.Contains(msg, "conversion webhook for"),
		strings.Contains(msg, "no endpoints available for service"):
		return notYet
	case apierrors.IsAlreadyExists(err):
		// Admission is over by the existence check; a dry run's conversion
		// is not (it encodes only a new object).
		if kind == conversionProbe {
			return blocked
		}
		return answered
	case apierrors.IsInvalid(err):
		// Validation runs after the mutating webhooks, before the
		// validating ones and storage.
		if kind == mutatingProbe {
			return answered
		}
		return blocked
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err), apierrors.IsBadRequest(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsUnauthorized(err):
		return blocked
	}
	var status apierrors.APIStatus
	if asAPIStatus(err, &status) {
		if code := status.Status().Code; code >= 400 && code < http.StatusInternalServerError && code != http.StatusTooManyRequests && code != http.StatusRequestTimeout {
			return blocked
		}
	}
	return notYet // 5xx, 429, timeouts, the API server itself unreachable
}

// deniedBy returns the webhook named in an admission denial
// (`admission webhook "vpod.kb.io" denied the request: …`).
func deniedBy(msg string) (string, bool) {
	const pre = `admission webhook "`
	i := strings.Index(msg, pre)
	if i < 0 {
		return "", false
	}
	rest := msg[i+len(pre):]
	j := strings.Index(rest, `" denied the request`)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// ProbeLabel marks every object a webhook probe sends (none is stored: they
// are dry runs).
const ProbeLabel = "aiplatform.dev/webhook-probe"

// probeName prefixes the name of every probe object.
const probeName = "aiplatform-webhook-probe-"

// selectorLabels are labels that the selector matches (nil selector: any),
// or ok=false when none can be made (a selector that matches nothing).
func selectorLabels(sel *metav1.LabelSelector) (map[string]string, bool) {
	out := map[string]string{ProbeLabel: "true"}
	if sel == nil {
		return out, true
	}
	for k, v := range sel.MatchLabels {
		out[k] = v
	}
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			if len(e.Values) > 0 {
				out[e.Key] = e.Values[0]
			}
		case metav1.LabelSelectorOpExists:
			if _, ok := out[e.Key]; !ok {
				out[e.Key] = "aiplatform-webhook-probe"
			}
		case metav1.LabelSelectorOpDoesNotExist:
			delete(out, e.Key)
		case metav1.LabelSelectorOpNotIn:
			// Absent satisfies NotIn.
		}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || !s.Matches(labels.Set(out)) {
		return nil, false
	}
	return out, true
}

// selects reports whether a namespace with these labels is selected (nil:
// every namespace).
func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}

// builtinProbe is the spec of a minimal valid object of the built-in kinds
// webhooks of the platform's installs match (pods and their owners), with
// the probe's labels in the selectors and pod templates that need them.
func builtinProbe(gvr schema.GroupVersionResource, lbls map[string]string) (map[string]any, bool) {
	container := []any{map[string]any{"name": "probe", "image": "probe"}}
	podSpec := map[string]any{"containers": container}
	template := func(restart string) map[string]any {
		spec := map[string]any{"containers": container}
		if restart != "" {
			spec["restartPolicy"] = restart
		}
		return map[string]any{"metadata": map[string]any{"labels": toAny(lbls)}, "spec": spec}
	}
	owner := func() map[string]any {
		return map[string]any{"selector": map[string]any{"matchLabels": toAny(lbls)}, "template": template("")}
	}
	switch gvr {
	case schema.GroupVersionResource{Version: "v1", Resource: "pods"}:
		return podSpec, true
	case schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}:
		return map[string]any{"template": template("Never")}, true
	case schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"},
		schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}:
		return owner(), true
	case schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}:
		s := owner()
		s["serviceName"] = "probe"
		return s, true
	}
	return nil, false
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// minimalValue is the smallest value a structural schema accepts, as far as
// its types, required fields, defaults, enums and bounds say (patterns,
// formats other than date-time and CEL rules are not read: an object that
// breaks them is invalid, which blocks the probe of a validating webhook).
func minimalValue(s *apiextensionsv1.JSONSchemaProps, depth int) any {
	if s == nil || depth > 32 {
		return map[string]any{}
	}
	if s.Default != nil {
		var v any
		if json.Unmarshal(s.Default.Raw, &v) == nil {
			return v
		}
	}
	if len(s.Enum) > 0 {
		var v any
		if json.Unmarshal(s.Enum[0].Raw, &v) == nil {
			return v
		}
	}
	switch s.Type {
	case "object":
		out := map[string]any{}
		req := append([]string(nil), s.Required...)
		sort.Strings(req)
		for _, name := range req {
			p, ok := s.Properties[name]
			if !ok && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				p, ok = *s.AdditionalProperties.Schema, true
			}
			if ok {
				out[name] = minimalValue(&p, depth+1)
			} else {
				out[name] = map[string]any{}
			}
		}
		return out
	case "array":
		out := []any{}
		if s.MinItems != nil && s.Items != nil {
			for range *s.MinItems {
				out = append(out, minimalValue(s.Items.Schema, depth+1))
			}
		}
		return out
	case "string":
		if s.Format == "date-time" {
			return "1970-01-01T00:00:00Z"
		}
		n := 1
		if s.MinLength != nil && *s.MinLength > 1 {
			n = int(*s.MinLength)
		}
		return strings.Repeat("a", n)
	case "integer", "number":
		v := 1.0
		if s.Minimum != nil {
			v = *s.Minimum
			if s.ExclusiveMinimum {
				v++
			}
		}
		if s.Maximum != nil && v > *s.Maximum {
			v = *s.Maximum
		}
		if s.Type == "integer" {
			return int64(math.Ceil(v))
		}
		return v
	case "boolean":
		return false
	}
	if s.XIntOrString {
		return int64(1)
	}
	return map[string]any{}
}
