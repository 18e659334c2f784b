package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Installs are ready only when their webhooks answer. A controller's
// Deployment is Available when its pod is Ready, but the API server calls a
// webhook through the Service's endpoints, which it learns of later: in that
// gap every create the webhook matches fails ("failed calling webhook …:
// no endpoints available", 503, connection refused). So after the objects
// are ready, each webhook the install created gets requests through it — a
// server-side dry-run create (nothing is stored) of a minimal object its
// rules, namespaceSelector and objectSelector match — until it answers:
// allowing or denying, both are answers.

// webhookPoll is how often WaitWebhooks asks again of webhooks not
// answering.
const webhookPoll = 500 * time.Millisecond

// hook is one mutating or validating webhook of a configuration.
type hook struct {
	config        string
	kind          probeKind
	name          string
	cc            admissionv1.WebhookClientConfig
	rules         []admissionv1.RuleWithOperations
	ignore        bool // failurePolicy Ignore
	nsSel, objSel *metav1.LabelSelector
}

func (h hook) what() string { return fmt.Sprintf("%s %s (%s)", h.kind, h.name, h.config) }

// probeTarget is one request a probe can make.
type probeTarget struct {
	gvr       schema.GroupVersionResource
	namespace string
	obj       *unstructured.Unstructured
	list      bool // conversion: list first, which converts any stored object
}

func (t probeTarget) String() string {
	r := t.gvr.Resource
	if t.gvr.Group != "" {
		r += "." + t.gvr.Group
	}
	r += "/" + t.gvr.Version
	if t.namespace != "" {
		r += " in namespace " + t.namespace
	}
	return "dry-run create of " + r
}

// probe asks one webhook until it answers.
type probe struct {
	what     string
	webhook  string
	kind     probeKind
	targets  []probeTarget
	next     int
	requests int
	last     string
	done     bool
	note     string // why it could not be probed, when done without an answer
}

// WaitWebhooks waits, within ctx, until every webhook of objs answers: each
// admission webhook of their Mutating/ValidatingWebhookConfigurations, and
// the conversion webhook of each of their CRDs that serves more than one
// version. Webhooks that cannot be probed are named in progress and not
// waited for: failurePolicy Ignore (a request passes whether or not it
// answers), rules that name no resource the API server serves, and, with
// callerCA, every Service client (the caller injects the CA after this:
// WaitServiceWebhooks then; a cert-manager annotation on the configuration
// does not count, cert-manager's objects being left out).
// Without callerCA such a webhook is probed like any other: controllers that
// rotate their own certificate (LWS, Kueue, JobSet, the Trainer) inject the
// CA once they run, and until then the API server's calls fail (x509), which
// is not an answer. The error on timeout names each webhook not answering
// and its last error.
func (c *Client) WaitWebhooks(ctx context.Context, objs []*unstructured.Unstructured, defaultNamespace string, callerCA bool, progress func(string)) error {
	typed, err := c.Typed()
	if err != nil {
		return err
	}
	reg := typed.AdmissionregistrationV1()
	var hooks []hook
	var crds []string
	ours := map[string]bool{} // the Services the install creates, "namespace/name"
	for _, o := range objs {
		if o.GroupVersionKind().Group == "" && o.GetKind() == "Service" {
			ns := o.GetNamespace()
			if ns == "" {
				ns = defaultNamespace
			}
			ours[ns+"/"+o.GetName()] = true
		}
	}
	for _, o := range objs {
		if o.GroupVersionKind().Group == "apiextensions.k8s.io" && o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
		if o.GroupVersionKind().Group != admissionv1.GroupName {
			continue
		}
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			cfg, err := reg.MutatingWebhookConfigurations().Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading %s: %w", ObjectName(o), err)
			}
			hooks = append(hooks, mutatingHooks(cfg)...)
		case "ValidatingWebhookConfiguration":
			cfg, err := reg.ValidatingWebhookConfigurations().Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading %s: %w", ObjectName(o), err)
			}
			hooks = append(hooks, validatingHooks(cfg)...)
		}
	}
	var now []hook
	for _, h := range hooks {
		if svc := h.cc.Service; svc != nil && !ours[svc.Namespace+"/"+svc.Name] {
			say(progress, "%s: not probed: it calls Service %s/%s, which this install does not create (it is probed with the install that does)", h.what(), svc.Namespace, svc.Name)
			continue
		}
		// With cert-manager's objects left out, the configurations may
		// still ask cert-manager's injector for their CA (KServe's carry
		// cert-manager.io/inject-ca-from whatever its values say), but no
		// injector and no Certificate are there to answer: until the caller
		// injects the CA every call fails x509, so probing here would only
		// wait out the timeout (it did, for KServe's 7 webhooks).
		// Nor one with a caBundle: an upgrade's patch may leave one that is
		// not the CA (seen on KServe's llmisvc upgrade: "unable to parse
		// bytes as PEM block") until the caller injects it again.
		if callerCA && h.cc.Service != nil {
			say(progress, "%s: not probed yet: its CA is injected after the install", h.what())
			continue
		}
		now = append(now, h)
	}
	return c.probeWebhooks(ctx, now, crds, ours, nil, defaultNamespace, callerCA, progress)
}

// WaitServiceWebhooks waits, within ctx, until every admission webhook that
// calls the Service namespace/service answers (see WaitWebhooks): for a
// caller that injected their CA after the install.
func (c *Client) WaitServiceWebhooks(ctx context.Context, namespace, service string, progress func(string)) error {
	typed, err := c.Typed()
	if err != nil {
		return err
	}
	reg := typed.AdmissionregistrationV1()
	mutating, err := reg.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing mutating webhook configurations: %w", err)
	}
	validating, err := reg.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing validating webhook configurations: %w", err)
	}
	var all, hooks []hook
	for i := range mutating.Items {
		all = append(all, mutatingHooks(&mutating.Items[i])...)
	}
	for i := range validating.Items {
		all = append(all, validatingHooks(&validating.Items[i])...)
	}
	for _, h := range all {
		if callsService(h.cc, namespace, service) {
			hooks = append(hooks, h)
		}
	}
	unconvertible := map[schema.GroupResource]string{}
	crds, err := c.conversionCRDs(ctx, namespace, service, unconvertible, progress)
	if err != nil {
		return err
	}
	return c.probeWebhooks(ctx, hooks, crds, map[string]bool{namespace + "/" + service: true}, unconvertible, namespace, false, progress)
}

// conversionCRDs are the CRDs whose conversion webhook calls the Service
// namespace/service: another release's CRDs (KServe's llmisvc CRD chart is
// installed before the controller that serves their conversion). Listing
// CRDs is asked first (SelfSubjectAccessReview); without it they are named
// as not probed.
func (c *Client) conversionCRDs(ctx context.Context, namespace, service string, unconvertible map[schema.GroupResource]string, progress func(string)) ([]string, error) {
	env := &probeEnv{c: c, access: map[accessKey]bool{}}
	if !env.may(ctx, "list", crdGVR, "") {
		say(progress, "conversion webhooks of Service %s/%s: not probed: %s", namespace, service, env.deniedSince(0))
		return nil, nil
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, err
	}
	list, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CRDs: %w", err)
	}
	var out []string
	for _, u := range list.Items {
		ns, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
		if ns != namespace || name != service {
			continue
		}
		if ca, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle"); ca == "" {
			// The caller injected the CA into the admission webhooks only
			// (InjectCABundle): every call to this one fails x509, and so
			// does every request at a version other than the storage one.
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
			versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
			for _, v := range versions {
				if m, ok := v.(map[string]any); ok && m["storage"] == true {
					unconvertible[schema.GroupResource{Group: group, Resource: plural}], _ = m["name"].(string)
				}
			}
			say(progress, "conversion webhook of CRD %s: not probed: it has no caBundle (no CA is injected into CRD conversion webhooks without cert-manager), so the API server cannot call it; requests at versions other than the storage version fail", u.GetName())
			continue
		}
		out = append(out, u.GetName())
	}
	return out, nil
}

func mutatingHooks(cfg *admissionv1.MutatingWebhookConfiguration) []hook {
	var out []hook
	for _, w := range cfg.Webhooks {
		out = append(out, hook{config: "MutatingWebhookConfiguration " + cfg.Name, kind: mutatingProbe, name: w.Name, cc: w.ClientConfig, rules: w.Rules,
			ignore: w.FailurePolicy != nil && *w.FailurePolicy == admissionv1.Ignore, nsSel: w.NamespaceSelector, objSel: w.ObjectSelector})
	}
	return out
}

func validatingHooks(cfg *admissionv1.ValidatingWebhookConfiguration) []hook {
	var out []hook
	for _, w := range cfg.Webhooks {
		out = append(out, hook{config: "ValidatingWebhookConfiguration " + cfg.Name, kind: validatingProbe, name: w.Name, cc: w.ClientConfig, rules: w.Rules,
			ignore: w.FailurePolicy != nil && *w.FailurePolicy == admissionv1.Ignore, nsSel: w.NamespaceSelector, objSel: w.ObjectSelector})
	}
	return out
}

func say(progress func(string), format string, args ...any) {
	if progress != nil {
		progress(fmt.Sprintf(format, args...))
	}
}

// probeWebhooks plans a probe for each hook and each CRD's conversion
// webhook, then asks every webhook not yet answering every webhookPoll until
// all answer or ctx ends.
func (c *Client) probeWebhooks(ctx context.Context, hooks []hook, crds []string, ours map[string]bool, unconvertible map[schema.GroupResource]string,
	defaultNamespace string, callerCA bool, progress func(string)) error {
	if len(hooks) == 0 && len(crds) == 0 {
		return nil
	}
	env, err := c.newProbeEnv(ctx, defaultNamespace)
	if err != nil {
		return fmt.Errorf("planning the webhook probes: %w", err)
	}
	env.unconvertible = unconvertible
	var probes []*probe
	// The webhooks left out, one line per reason: a chart like Kueue's has
	// dozens for kinds this cluster does not serve.
	var reasons []string
	skipped := map[string][]string{}
	skip := func(reason string, h hook) {
		if skipped[reason] == nil {
			reasons = append(reasons, reason)
		}
		skipped[reason] = append(skipped[reason], h.name)
	}
	for _, h := range hooks {
		if h.ignore {
			skip("not waited for: with failurePolicy Ignore a request passes whether or not it answers", h)
			continue
		}
		p, note := env.plan(ctx, h)
		if p == nil {
			skip("cannot be probed: "+note, h)
			continue
		}
		probes = append(probes, p)
	}
	for _, r := range reasons {
		say(progress, "%s (%d webhooks): %s", r, len(skipped[r]), strings.Join(skipped[r], ", "))
	}
	for _, name := range crds {
		p, note := env.planConversion(ctx, name, ours, callerCA)
		if p == nil {
			if note != "" {
				say(progress, "CRD %s: conversion webhook not probed: %s", name, note)
			}
			continue
		}
		probes = append(probes, p)
	}
	if len(probes) == 0 {
		return nil
	}
	return c.askWebhooks(ctx, env.dyn, probes, progress)
}

func (c *Client) askWebhooks(ctx context.Context, dyn dynamic.Interface, probes []*probe, progress func(string)) error {
	start := time.Now()
	lastReport, lastSummary := time.Time{}, ""
	for {
		var pending []*probe
		for _, p := range probes {
			if !p.done {
				pending = append(pending, p)
			}
		}
		forEach(len(pending), driftWorkers, func(i int) { pending[i].try(ctx, dyn) })
		var waiting []string
		for _, p := range pending {
			if p.done && p.note != "" {
				say(progress, "%s: cannot be probed: %s", p.what, p.note)
			}
			if !p.done {
				waiting = append(waiting, p.what+" (last: "+p.last+")")
			}
		}
		if len(waiting) == 0 {
			n, unprobed := 0, 0
			for _, p := range probes {
				n += p.requests
				if p.note != "" {
					unprobed++
				}
			}
			say(progress, "%d of %d webhooks answered after %s (%d requests; %d could not be reached by a probe, see above)",
				len(probes)-unprobed, len(probes), time.Since(start).Round(100*time.Millisecond), n, unprobed)
			return nil
		}
		sort.Strings(waiting)
		summary := strings.Join(waiting, "; ")
		if summary != lastSummary || time.Since(lastReport) >= 15*time.Second {
			say(progress, "%d of %d webhooks answering after %s; waiting for %s", len(probes)-len(waiting), len(probes), time.Since(start).Round(time.Second), summary)
			lastReport, lastSummary = time.Now(), summary
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d webhooks not answering after %s:\n  %s", len(waiting), len(probes), time.Since(start).Round(time.Second), strings.Join(waiting, "\n  "))
		case <-time.After(webhookPoll):
		}
	}
}

// try makes the probe's request once.
func (p *probe) try(ctx context.Context, dyn dynamic.Interface) {
	t := p.targets[p.next]
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	p.requests++
	var err error
	if t.list {
		var l *unstructured.UnstructuredList
		l, err = dyn.Resource(t.gvr).List(rctx, metav1.ListOptions{Limit: 1})
		if err == nil && len(l.Items) > 0 {
			p.done = true // a stored object read at this version went through the webhook
			return
		}
		what := "list of " + t.gvr.String()
		if err != nil {
			p.record(classifyProbe(err, p.webhook, p.kind), what, err)
			return
		}
		p.requests++
	}
	_, err = dyn.Resource(t.gvr).Namespace(t.namespace).Create(rctx, t.obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager})
	p.record(classifyProbe(err, p.webhook, p.kind), t.String(), err)
}

func (p *probe) record(v verdict, what string, err error) {
	switch v {
	case answered:
		p.done = true
	case notYet:
		p.last = what + ": " + err.Error()
	case blocked:
		p.last = what + ": " + err.Error()
		p.next++
		if p.next == len(p.targets) {
			p.done, p.note = true, "no request could reach it ("+p.last+")"
		}
	}
}

// probeEnv is what planning the probes reads from the cluster, read once.
type probeEnv struct {
	c          *Client
	dyn        dynamic.Interface
	namespaces []corev1.Namespace // "default", the install's, then the rest by name
	resources  map[string]*metav1.APIResourceList
	preferred  map[string]string // group → preferred version
	crds       map[string]*apiextensionsv1.CustomResourceDefinition
	// unconvertible: custom resources whose conversion webhook cannot be
	// called, with their storage version, the only one a request reaches
	// the admission webhooks at.
	unconvertible map[schema.GroupResource]string
	access        map[accessKey]bool // SelfSubjectAccessReviews asked (webhooks_access.go)
	denied        []accessKey        // those refused, in order
}

func (c *Client) newProbeEnv(ctx context.Context, defaultNamespace string) (*probeEnv, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	// Without warnings: a probe at a deprecated version would log the API
	// server's deprecation warning at every try.
	cfg := rest.CopyConfig(c.rest)
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	env := &probeEnv{c: c, dyn: dyn, resources: map[string]*metav1.APIResourceList{}, preferred: map[string]string{},
		crds: map[string]*apiextensionsv1.CustomResourceDefinition{}, access: map[accessKey]bool{}}
	var nsList *corev1.NamespaceList
	if env.may(ctx, "list", corev1.SchemeGroupVersion.WithResource("namespaces"), "") {
		if nsList, err = typed.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			return nil, fmt.Errorf("listing namespaces: %w", err)
		}
	} else {
		// A least-privilege identity may only get namespaces (examples/rbac's
		// install roles: Helm creates the release's): the two candidates
		// that come first anyway.
		nsList = &corev1.NamespaceList{}
		for _, n := range []string{"default", defaultNamespace} {
			if n == "" || !env.may(ctx, "get", corev1.SchemeGroupVersion.WithResource("namespaces"), "") {
				continue
			}
			if ns, gerr := typed.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{}); gerr == nil && !slices.ContainsFunc(nsList.Items, func(x corev1.Namespace) bool { return x.Name == n }) {
				nsList.Items = append(nsList.Items, *ns)
			}
		}
	}
	rank := func(n string) int {
		switch n {
		case "default":
			return 0
		case defaultNamespace:
			return 1
		}
		return 2
	}
	var nss []corev1.Namespace
	for _, n := range nsList.Items {
		if n.Status.Phase != corev1.NamespaceTerminating && n.DeletionTimestamp == nil {
			nss = append(nss, n)
		}
	}
	sort.SliceStable(nss, func(i, j int) bool {
		if ri, rj := rank(nss[i].Name), rank(nss[j].Name); ri != rj {
			return ri < rj
		}
		return nss[i].Name < nss[j].Name
	})
	env.namespaces = nss
	groups, err := typed.Discovery().ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	for _, g := range groups.Groups {
		env.preferred[g.Name] = g.PreferredVersion.Version
	}
	return env, nil
}

// resource is the served resource, or nil.
func (e *probeEnv) resource(gv schema.GroupVersion, resource string) *metav1.APIResource {
	list, ok := e.resources[gv.String()]
	if !ok {
		typed, err := e.c.Typed()
		if err == nil {
			list, _ = typed.Discovery().ServerResourcesForGroupVersion(gv.String())
		}
		e.resources[gv.String()] = list
	}
	if list == nil {
		return nil
	}
	for i := range list.APIResources {
		if list.APIResources[i].Name == resource {
			return &list.APIResources[i]
		}
	}
	return nil
}

func (e *probeEnv) crd(ctx context.Context, name string) *apiextensionsv1.CustomResourceDefinition {
	if crd, ok := e.crds[name]; ok {
		return crd
	}
	crd, _ := e.c.CRD(ctx, name)
	e.crds[name] = crd
	return crd
}

// namespaceFor is the first namespace the selector admits, or "".
func (e *probeEnv) namespaceFor(sel *metav1.LabelSelector) string {
	for _, n := range e.namespaces {
		if selects(sel, n.Labels) {
			return n.Name
		}
	}
	return ""
}

// plan is the probe of an admission webhook: one target per served
// resource its CREATE rules name, in the rules' order; nil and why not when
// there is none.
func (e *probeEnv) plan(ctx context.Context, h hook) (*probe, string) {
	lbls, ok := selectorLabels(h.objSel)
	if !ok {
		return nil, "no labels satisfy its objectSelector"
	}
	p := &probe{what: h.what(), webhook: h.name, kind: h.kind}
	seen := map[schema.GroupVersionResource]bool{}
	mark := len(e.denied)
	why := "its rules name no resource the API server serves for CREATE"
	for _, r := range h.rules {
		if !slices.Contains(r.Operations, admissionv1.Create) && !slices.Contains(r.Operations, admissionv1.OperationAll) {
			continue
		}
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					if g == "*" || res == "*" || strings.Contains(res, "/") {
						continue
					}
					if v == "*" {
						v = e.preferred[g]
						if g == "" {
							v = "v1"
						}
					}
					gvr := schema.GroupVersionResource{Group: g, Version: v, Resource: res}
					ar := e.resource(gvr.GroupVersion(), res)
					if ar == nil || seen[gvr] || (r.Scope != nil && *r.Scope == admissionv1.ClusterScope && ar.Namespaced) ||
						(r.Scope != nil && *r.Scope == admissionv1.NamespacedScope && !ar.Namespaced) {
						continue
					}
					seen[gvr] = true
					if sv, ok := e.unconvertible[gvr.GroupResource()]; ok && gvr.Version != sv {
						why = "requests at " + gvr.String() + " stop at the CRD's conversion webhook, which cannot be called (no caBundle)"
						continue
					}
					ns := ""
					if ar.Namespaced {
						if ns = e.namespaceFor(h.nsSel); ns == "" {
							why = "no namespace matches its namespaceSelector"
							continue
						}
					}
					if !e.may(ctx, "create", gvr, ns) {
						continue
					}
					p.targets = append(p.targets, probeTarget{gvr: gvr, namespace: ns, obj: e.object(ctx, gvr, ar.Kind, ns, lbls)})
				}
			}
		}
	}
	if len(p.targets) == 0 {
		if denied := e.deniedSince(mark); denied != "" {
			return nil, denied
		}
		return nil, why
	}
	return p, ""
}

// planConversion is the probe of a CRD's conversion webhook: a list, then a
// dry-run create, at a served version that is not the storage version; nil
// and why not (or "" for a CRD without one) otherwise.
func (e *probeEnv) planConversion(ctx context.Context, name string, ours map[string]bool, callerCA bool) (*probe, string) {
	crd := e.crd(ctx, name)
	if crd == nil || crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil, ""
	}
	if w := crd.Spec.Conversion.Webhook; w != nil && w.ClientConfig != nil && w.ClientConfig.Service != nil && !ours[w.ClientConfig.Service.Namespace+"/"+w.ClientConfig.Service.Name] {
		return nil, fmt.Sprintf("it calls Service %s/%s, which this install does not create (it is probed with the install that does)",
			w.ClientConfig.Service.Namespace, w.ClientConfig.Service.Name)
	}
	if w := crd.Spec.Conversion.Webhook; callerCA && w != nil && w.ClientConfig != nil && w.ClientConfig.Service != nil {
		return nil, "its CA is injected after the install"
	}
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && !v.Storage {
			version = v.Name
			break
		}
	}
	if version == "" {
		return nil, "the CRD serves only its storage version, so the API server never calls it"
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	ns := ""
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		if len(e.namespaces) == 0 {
			return nil, "no namespace to create a probe in"
		}
		ns = e.namespaces[0].Name
	}
	mark := len(e.denied)
	if !e.may(ctx, "list", gvr, "") || !e.may(ctx, "create", gvr, ns) {
		return nil, e.deniedSince(mark)
	}
	lbls, _ := selectorLabels(nil)
	return &probe{what: "conversion webhook of CRD " + name, kind: conversionProbe,
		targets: []probeTarget{{gvr: gvr, namespace: ns, list: true, obj: e.object(ctx, gvr, crd.Spec.Names.Kind, ns, lbls)}}}, ""
}

// object is a minimal object of the resource: a built-in's from
// builtinProbe, a custom resource's from its CRD's schema at that version.
func (e *probeEnv) object(ctx context.Context, gvr schema.GroupVersionResource, kind, namespace string, lbls map[string]string) *unstructured.Unstructured {
	obj := map[string]any{}
	if spec, ok := builtinProbe(gvr, lbls); ok {
		obj["spec"] = spec
	} else if gvr.Group != "" {
		if crd := e.crd(ctx, gvr.Resource+"."+gvr.Group); crd != nil {
			for _, v := range crd.Spec.Versions {
				if v.Name == gvr.Version && v.Schema != nil {
					if m, ok := minimalValue(v.Schema.OpenAPIV3Schema, 0).(map[string]any); ok {
						obj = m
					}
				}
			}
		}
	}
	meta := map[string]any{"name": probeName + utilrand.String(6), "labels": toAny(lbls)}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	obj["apiVersion"] = gvr.GroupVersion().String()
	obj["kind"] = kind
	obj["metadata"] = meta
	return &unstructured.Unstructured{Object: obj}
}
