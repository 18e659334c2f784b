package kube

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server's errors as it builds them (k8s.io/apiserver v0.37:
// webhook/errors.ToStatusErr for denials, the dispatchers'
// NewInternalError(ErrCallingWebhook) for calls that fail, the conversion
// webhook converter's "conversion webhook for … failed"), with messages
// taken from real runs against LWS's and Kueue's webhooks.
func TestClassifyProbe(t *testing.T) {
	lwsPod := schema.GroupResource{Resource: "pods"}
	denied := func(code int32, hook, msg string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: metav1.StatusReasonForbidden,
			Message: `admission webhook "` + hook + `" denied the request: ` + msg}}
	}
	cases := []struct {
		name string
		err  error
		hook string
		kind probeKind
		want verdict
	}{
		{"allowed", nil, "mpod.kb.io", mutatingProbe, answered},
		{"no endpoints yet", apierrors.NewInternalError(errors.New(`failed calling webhook "mleaderworkerset.kb.io": failed to call webhook: Post "https://lws-webhook-service.lws-system.svc:443/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset?timeout=10s": no endpoints available for service "lws-webhook-service"`)),
			"mleaderworkerset.kb.io", mutatingProbe, notYet},
		{"connection refused", apierrors.NewInternalError(errors.New(`failed calling webhook "vpod.kb.io": failed to call webhook: Post "https://lws-webhook-service.lws-system.svc:443/validate--v1-pod?timeout=10s": dial tcp 127.0.0.1:41235: connect: connection refused`)),
			"vpod.kb.io", validatingProbe, notYet},
		{"503 from the service proxy", apierrors.NewServiceUnavailable(`no endpoints available for service "lws-webhook-service"`), "mpod.kb.io", mutatingProbe, notYet},
		{"another webhook not answering first", apierrors.NewInternalError(errors.New(`failed calling webhook "mpod.kb.io": failed to call webhook: Post "https://lws-webhook-service.lws-system.svc:443/mutate--v1-pod?timeout=10s": context deadline exceeded`)),
			"vpod.kb.io", validatingProbe, notYet},
		{"x509 before the CA is injected", apierrors.NewInternalError(errors.New(`failed calling webhook "inferenceservice.kserve-webhook-server.defaulter": failed to call webhook: Post "https://kserve-webhook-server-service.kserve.svc:443/mutate-serving-kserve-io-v1beta1-inferenceservice?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority`)),
			"inferenceservice.kserve-webhook-server.defaulter", mutatingProbe, notYet},
		{"denied by the webhook probed", denied(http.StatusForbidden, "vpod.kb.io", `metadata.annotations[leaderworkerset.sigs.k8s.io/size]: Required value`), "vpod.kb.io", validatingProbe, answered},
		{"denied with 500 (admission.Errored)", denied(http.StatusInternalServerError, "mjob.kb.io", `the object has no pod template`), "mjob.kb.io", mutatingProbe, answered},
		{"denied by another webhook", denied(http.StatusForbidden, "mpod.kb.io", `bad`), "vpod.kb.io", validatingProbe, blocked},
		{"schema invalid after the mutating webhooks", apierrors.NewInvalid(schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}, "aiplatform-webhook-probe-x",
			field.ErrorList{field.Required(field.NewPath("spec", "leaderWorkerTemplate"), "")}), "mleaderworkerset.kb.io", mutatingProbe, answered},
		{"schema invalid before the validating webhooks", apierrors.NewInvalid(schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}, "aiplatform-webhook-probe-x",
			field.ErrorList{field.Required(field.NewPath("spec", "leaderWorkerTemplate"), "")}), "vleaderworkerset.kb.io", validatingProbe, blocked},
		{"RBAC", apierrors.NewForbidden(lwsPod, "", errors.New(`User "alice" cannot create resource "pods" in API group "" in the namespace "default"`)), "mpod.kb.io", mutatingProbe, blocked},
		{"namespace gone", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team-a"), "mpod.kb.io", mutatingProbe, blocked},
		{"already exists: admission passed", apierrors.NewAlreadyExists(lwsPod, "aiplatform-webhook-probe-x"), "vpod.kb.io", validatingProbe, answered},
		{"request timeout", apierrors.NewTimeoutError("request did not complete within requested timeout", 0), "mpod.kb.io", mutatingProbe, notYet},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), "mpod.kb.io", mutatingProbe, notYet},
		{"API server unreachable", &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/api/v1/namespaces/default/pods", Err: syscall.ECONNREFUSED}, "mpod.kb.io", mutatingProbe, notYet},
		{"conversion webhook not answering", apierrors.NewInternalError(errors.New(`conversion webhook for kueue.x-k8s.io/v1beta1, Kind=ClusterQueue failed: Post "https://kueue-webhook-service.kueue-system.svc:443/convert?timeout=30s": no endpoints available for service "kueue-webhook-service"`)),
			"", conversionProbe, notYet},
		{"conversion after admission denied", denied(http.StatusForbidden, "vclusterqueue.kb.io", `spec.cohort: Invalid value`), "", conversionProbe, blocked},
		{"conversion: existing object not encoded", apierrors.NewAlreadyExists(schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "clusterqueues"}, "x"), "", conversionProbe, blocked},
		{"conversion answered", nil, "", conversionProbe, answered},
	}
	for _, c := range cases {
		if got := classifyProbe(c.err, c.hook, c.kind); got != c.want {
			t.Errorf("%s: classifyProbe(%v) = %s, want %s", c.name, c.err, got, c.want)
		}
	}
}

func TestDeniedBy(t *testing.T) {
	if n, ok := deniedBy(`admission webhook "vleaderworkerset.kb.io" denied the request: spec.replicas: Invalid value: -1`); !ok || n != "vleaderworkerset.kb.io" {
		t.Errorf("deniedBy = %q, %v", n, ok)
	}
	if _, ok := deniedBy(`Internal error occurred: failed calling webhook "mpod.kb.io": failed to call webhook`); ok {
		t.Error("a failed call read as a denial")
	}
}

func TestSelectorLabels(t *testing.T) {
	lws := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "leaderworkerset.sigs.k8s.io/name", Operator: metav1.LabelSelectorOpExists}}}
	mixed := &metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "x"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
			{Key: "control-plane", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"controller-manager"}},
			{Key: ProbeLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
		},
	}
	for _, sel := range []*metav1.LabelSelector{nil, lws, mixed} {
		l, ok := selectorLabels(sel)
		if !ok {
			t.Errorf("selectorLabels(%v): none", sel)
			continue
		}
		s, _ := metav1.LabelSelectorAsSelector(sel)
		if sel != nil && !s.Matches(labels.Set(l)) {
			t.Errorf("selectorLabels(%v) = %v, which it does not match", sel, l)
		}
	}
	impossible := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "a", Operator: metav1.LabelSelectorOpIn, Values: []string{"x"}}, {Key: "a", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}}}
	if l, ok := selectorLabels(impossible); ok {
		t.Errorf("selectorLabels(impossible) = %v", l)
	}
	// Kueue's namespaceSelector leaves out its own namespace and kube-system.
	kueueNS := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "kueue-system"}}}}
	if selects(kueueNS, map[string]string{"kubernetes.io/metadata.name": "kueue-system"}) || !selects(kueueNS, map[string]string{"kubernetes.io/metadata.name": "default"}) {
		t.Error("selects disagrees with Kueue's namespaceSelector")
	}
}

func TestMinimalValue(t *testing.T) {
	var s apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(`{
	  "type": "object",
	  "properties": {
	    "spec": {"type": "object", "required": ["size", "mode", "template", "name", "list", "startAt", "port"], "properties": {
	      "size": {"type": "integer", "minimum": 1},
	      "mode": {"type": "string", "enum": ["Fast", "Slow"]},
	      "name": {"type": "string", "minLength": 3},
	      "startAt": {"type": "string", "format": "date-time"},
	      "port": {"x-kubernetes-int-or-string": true},
	      "list": {"type": "array", "minItems": 2, "items": {"type": "object", "required": ["x"], "properties": {"x": {"type": "boolean"}}}},
	      "template": {"type": "object", "required": ["replicas"], "properties": {"replicas": {"type": "integer", "default": 3}}},
	      "optional": {"type": "string"}
	    }}
	  },
	  "required": ["spec"]
	}`), &s); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(minimalValue(&s, 0))
	want := `{"spec":{"list":[{"x":false},{"x":false}],"mode":"Fast","name":"aaa","port":1,"size":1,"startAt":"1970-01-01T00:00:00Z","template":{"replicas":3}}}`
	if string(got) != want {
		t.Errorf("minimalValue =\n%s\nwant\n%s", got, want)
	}
}

func TestBuiltinProbe(t *testing.T) {
	l := map[string]string{ProbeLabel: "true", "leaderworkerset.sigs.k8s.io/name": "aiplatform-webhook-probe"}
	spec, ok := builtinProbe(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, l)
	if !ok {
		t.Fatal("no probe for Deployments")
	}
	sel := spec["selector"].(map[string]any)["matchLabels"]
	tpl := spec["template"].(map[string]any)["metadata"].(map[string]any)["labels"]
	if a, b := toJSON(sel), toJSON(tpl); a != b {
		t.Errorf("selector %s does not select the template's labels %s", a, b)
	}
	if _, ok := builtinProbe(schema.GroupVersionResource{Version: "v1", Resource: "services"}, l); ok {
		t.Error("a probe for Services, which builtinProbe does not know")
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
