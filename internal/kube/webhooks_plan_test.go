package kube

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// denyAccess are the "verb resource" pairs fakeProbeClient's access reviews
// refuse (set by a test, reset when it ends).
var denyAccess = map[string]bool{}

// fakeProbeClient is a Client over fakes serving core v1 pods and batch v1
// jobs, with the namespaces given: for the mapping from a webhook's rules and
// selectors to the probe's requests.
func fakeProbeClient(t *testing.T, namespaces ...*corev1.Namespace) *Client {
	t.Helper()
	var objs []runtime.Object
	for _, n := range namespaces {
		objs = append(objs, n)
	}
	typed := fake.NewClientset(objs...)
	// Access reviews: allowed unless the test's deny says otherwise.
	typed.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = !denyAccess[ra.Verb+" "+ra.Resource]
		return true, r, nil
	})
	typed.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}, {Name: "namespaces", Kind: "Namespace"}}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{{Name: "jobs", Namespaced: true, Kind: "Job"}}},
	}
	c := &Client{rest: &rest.Config{Host: "https://127.0.0.1:1"}}
	c.once.Do(func() {}) // the fakes below, never a real connection
	c.typed, c.dyn = typed, dynfake.NewSimpleDynamicClient(runtime.NewScheme())
	return c
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/metadata.name": name}}}
}

// Kueue's job webhook: its namespaceSelector leaves out kueue-system and
// kube-system, its rules name batch/v1 jobs (served) and kubeflow.org
// mpijobs (not served here), and an UPDATE-only rule.
func TestPlanKueueLikeWebhook(t *testing.T) {
	c := fakeProbeClient(t, namespace("kueue-system"), namespace("kube-system"), namespace("team-a"))
	env, err := c.newProbeEnv(context.Background(), "kueue-system")
	if err != nil {
		t.Fatal(err)
	}
	h := hook{config: "MutatingWebhookConfiguration kueue-mutating-webhook-configuration", kind: mutatingProbe, name: "mjob.kb.io",
		nsSel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "kueue-system"}}}},
		rules: []admissionv1.RuleWithOperations{
			{Operations: []admissionv1.OperationType{admissionv1.Update}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}},
			{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{"kubeflow.org"}, APIVersions: []string{"v2beta1"}, Resources: []string{"mpijobs"}}},
			{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, Rule: admissionv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs", "jobs/status"}}},
		}}
	p, why := env.plan(context.Background(), h)
	if p == nil {
		t.Fatalf("no probe: %s", why)
	}
	if len(p.targets) != 1 {
		t.Fatalf("targets %v, want batch/v1 jobs only", p.targets)
	}
	tg := p.targets[0]
	if tg.gvr.Group != "batch" || tg.gvr.Resource != "jobs" || tg.namespace != "team-a" {
		t.Errorf("target %s in %q, want batch/v1 jobs in team-a (default does not exist, kueue-system is left out)", tg.gvr, tg.namespace)
	}
	if tg.obj.GetKind() != "Job" || tg.obj.GetNamespace() != "team-a" || len(tg.obj.GetName()) <= len(probeName) || tg.obj.GetName()[:len(probeName)] != probeName {
		t.Errorf("object %s %s/%s", tg.obj.GetKind(), tg.obj.GetNamespace(), tg.obj.GetName())
	}
}

// LWS's pod webhook: its objectSelector needs the group-name label, which
// the probe pod carries; a webhook whose rules name nothing served cannot
// be probed, and says why.
func TestPlanLWSPodWebhook(t *testing.T) {
	c := fakeProbeClient(t, namespace("default"), namespace("lws-system"))
	env, err := c.newProbeEnv(context.Background(), "lws-system")
	if err != nil {
		t.Fatal(err)
	}
	pods := []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	h := hook{kind: validatingProbe, name: "vpod.kb.io", rules: pods,
		objSel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "leaderworkerset.sigs.k8s.io/name", Operator: metav1.LabelSelectorOpExists}}}}
	p, why := env.plan(context.Background(), h)
	if p == nil {
		t.Fatalf("no probe: %s", why)
	}
	obj := p.targets[0].obj
	if p.targets[0].namespace != "default" || obj.GetLabels()["leaderworkerset.sigs.k8s.io/name"] == "" {
		t.Errorf("pod in %q with labels %v", p.targets[0].namespace, obj.GetLabels())
	}
	unserved := hook{kind: mutatingProbe, name: "mleaderworkerset.kb.io", rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
		Rule: admissionv1.Rule{APIGroups: []string{"leaderworkerset.x-k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"leaderworkersets"}}}}}
	if p, why := env.plan(context.Background(), unserved); p != nil || why == "" {
		t.Errorf("a webhook on an unserved resource planned %v (%q)", p, why)
	}
}

// KServe's chart without cert-manager: its configurations still carry
// cert-manager's inject-ca-from annotation, but with cert-manager's objects
// left out (callerCA) nothing injects a CA until the caller does, so the
// release's wait leaves them alone (probing them waited out the timeout on
// x509 errors); without callerCA the same webhook is probed.
func TestWaitWebhooksLeavesCallerCAWebhooks(t *testing.T) {
	c := fakeProbeClient(t, namespace("default"), namespace("kserve"))
	fail := admissionv1.Fail
	cfg := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "trainedmodel.serving.kserve.io", Annotations: map[string]string{"cert-manager.io/inject-ca-from": "kserve/serving-cert"}},
		Webhooks: []admissionv1.ValidatingWebhook{{Name: "trainedmodel.kserve-webhook-server.validator", FailurePolicy: &fail,
			ClientConfig: admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: "kserve", Name: "kserve-webhook-server-service"}},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
	}
	if _, err := c.typed.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("admissionregistration.k8s.io/v1")
	obj.SetKind("ValidatingWebhookConfiguration")
	obj.SetName(cfg.Name)
	svc := &unstructured.Unstructured{}
	svc.SetAPIVersion("v1")
	svc.SetKind("Service")
	svc.SetName("kserve-webhook-server-service") // namespace: the release's
	var said []string
	// Another install's webhook (its Service not among the objects: a CRD
	// chart installed before its controller) is not probed either.
	if err := c.WaitWebhooks(context.Background(), []*unstructured.Unstructured{obj}, "kserve", false, func(m string) { said = append(said, m) }); err != nil ||
		len(said) != 1 || !strings.Contains(said[0], "which this install does not create") {
		t.Errorf("a webhook of a Service the install does not create: %v, progress %q", err, said)
	}
	said = nil
	if err := c.WaitWebhooks(context.Background(), []*unstructured.Unstructured{obj, svc}, "kserve", true, func(m string) { said = append(said, m) }); err != nil {
		t.Fatalf("callerCA: %v", err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "not probed yet: its CA is injected after the install") {
		t.Errorf("callerCA: progress %q, want the webhook named as left to the caller", said)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	said = nil
	if err := c.WaitWebhooks(ctx, []*unstructured.Unstructured{obj, svc}, "kserve", false, func(m string) { said = append(said, m) }); err == nil {
		t.Errorf("without callerCA the webhook was not probed (progress %q)", said)
	}
}

// An identity that may neither list namespaces nor create pods (an install
// role of examples/rbac): the probe env gets the candidate namespaces one
// by one instead of listing them, and a webhook on pods has no probe, the
// note naming the rule that would let it be probed — no request the
// identity may not make is made (the RBAC audits fail on any 403).
func TestPlanWithoutAccess(t *testing.T) {
	denyAccess = map[string]bool{"list namespaces": true, "create pods": true}
	t.Cleanup(func() { denyAccess = map[string]bool{} })
	c := fakeProbeClient(t, namespace("default"), namespace("lws-system"), namespace("team-a"))
	env, err := c.newProbeEnv(context.Background(), "lws-system")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.typed.(*fake.Clientset).Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "namespaces" {
			t.Errorf("namespaces listed without access")
		}
	}
	var names []string
	for _, n := range env.namespaces {
		names = append(names, n.Name)
	}
	if strings.Join(names, ",") != "default,lws-system" {
		t.Errorf("namespaces %v, want default,lws-system (got one by one)", names)
	}
	pods := []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	p, why := env.plan(context.Background(), hook{kind: mutatingProbe, name: "mpod.kb.io", rules: pods})
	if p != nil {
		t.Fatalf("planned %v without create on pods", p.targets)
	}
	if !strings.Contains(why, `{apiGroups: [""], resources: ["pods"], verbs: ["create"]}`) {
		t.Errorf("why %q does not name the rule", why)
	}
	jobs := []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{"", "batch"}, APIVersions: []string{"v1"}, Resources: []string{"pods", "jobs"}}}}
	if p, why := env.plan(context.Background(), hook{kind: mutatingProbe, name: "mjob.kb.io", rules: jobs}); p == nil || len(p.targets) != 1 || p.targets[0].gvr.Resource != "jobs" {
		t.Errorf("a webhook on pods and jobs, create on jobs only: %v (%q), want the jobs target alone", p, why)
	}
}
