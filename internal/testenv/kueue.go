package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// KueueNamespace is the namespace the local Kueue manager considers its own
// (Kueue's default): it holds the webhook certificate Secret, and Kueue leaves
// Jobs there alone.
const KueueNamespace = "kueue-system"

// kueueSecretName is Kueue's default internalCertManagement.webhookSecretName.
const kueueSecretName = "kueue-webhook-server-cert"

// DefaultKueueFrameworks are the integrations the local Kueue manager enables
// when Options.KueueFrameworks is empty.
var DefaultKueueFrameworks = []string{"batch/job"}

// kueueLocal is what running the Kueue manager as a local process takes,
// prepared once per Env and reused by every StartKueue.
type kueueLocal struct {
	config      string            // the manager's --config file
	webhookURL  string            // https://127.0.0.1:<port>: every webhook URL starts with it
	healthURL   string            // http://127.0.0.1:<port>: /readyz and /healthz
	certs       map[string][]byte // the kueue-webhook-server-cert Secret's data, also the files in certDir
	mutating    *admissionregistrationv1.MutatingWebhookConfiguration
	validating  *admissionregistrationv1.ValidatingWebhookConfiguration
	conversions map[string]*apiextensionsv1.CustomResourceConversion // by CRD name
}

// prepareKueue writes the manager's configuration and certificates under
// <Dir>/kueue and reads its webhooks from the Kueue module's manifests.
func (e *Env) prepareKueue(ctx context.Context) error {
	mod, err := ModuleDir(ctx, "sigs.k8s.io/kueue", KueueVersion)
	if err != nil {
		return err
	}
	dir := filepath.Join(e.Dir, "kueue")
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	k := &kueueLocal{
		config:     filepath.Join(dir, "config.yaml"),
		webhookURL: fmt.Sprintf("https://127.0.0.1:%d", e.operators.kueuePorts[0]),
		healthURL:  fmt.Sprintf("http://127.0.0.1:%d", e.operators.kueuePorts[1]),
	}
	if k.certs, err = newKueueWebhookCerts(KueueNamespace); err != nil {
		return err
	}
	for name, data := range k.certs {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return err
		}
	}
	frameworks := e.opts.KueueFrameworks
	if len(frameworks) == 0 {
		frameworks = DefaultKueueFrameworks
	}
	config, err := kueueConfig(mod, frameworks, e.operators.kueuePorts[0], e.operators.kueuePorts[1], certDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(k.config, config, 0o644); err != nil {
		return err
	}
	ca := k.certs[caCertKey]
	if k.mutating, k.validating, err = kueueWebhooks(mod, frameworks, k.webhookURL, ca); err != nil {
		return err
	}
	if k.conversions, err = kueueConversions(mod, k.webhookURL, ca); err != nil {
		return err
	}
	e.operators.kueue = k
	return nil
}

// kueueConfig is the manager's configuration: Kueue's own default
// (config/components/manager/controller_manager_config.yaml in the module) with
// what a local process on a shared machine needs instead.
func kueueConfig(mod string, frameworks []string, webhookPort, healthPort int, certDir string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(mod, "config", "components", "manager", "controller_manager_config.yaml"))
	if err != nil {
		return nil, fmt.Errorf("testenv: Kueue's default configuration: %w", err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("testenv: Kueue's default configuration: %w", err)
	}
	maps.Copy(cfg, map[string]any{
		"namespace": KueueNamespace,
		// Loopback only, on free ports: the defaults (:9443, :8081, :8443)
		// would listen on every interface and clash with anything else.
		"webhook": map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir},
		"health":  map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)},
		"metrics": map[string]any{"bindAddress": "0"}, // no metrics server
		// One manager, nothing to elect; with election on it waits for a lease
		// before it admits anything.
		"leaderElection": map[string]any{"leaderElect": false},
		// Kueue keeps its certificates in the Secret, which testenv creates with
		// certificates valid for 127.0.0.1, and injects the CA into the webhook
		// configurations and CRDs, which testenv creates with that CA already.
		// Turned off, the manager would read its metrics certificate from
		// /etc/kueue/metrics/certs.
		"internalCertManagement": map[string]any{
			"enable":             true,
			"webhookServiceName": kueueServiceName,
			"webhookSecretName":  kueueSecretName,
		},
		"manageJobsWithoutQueueName": false,
		"integrations":               map[string]any{"frameworks": frameworks},
	})
	return yaml.Marshal(cfg)
}

// kueueWebhooks reads Kueue's webhook configurations from the module
// (config/components/webhook) and keeps the webhooks for Kueue's own objects and
// for the enabled frameworks' objects: the others have failurePolicy Fail but
// no handler while their integration is off, so they would make every create of
// their kind fail. Each webhook is called by URL on loopback instead of through
// the webhook Service, with ca as its caBundle. The configurations are named as
// Kueue's kustomize build names them ("kueue-" prefix), which is also where
// Kueue's cert rotator looks for them.
func kueueWebhooks(mod string, frameworks []string, baseURL string, ca []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	dir := filepath.Join(mod, "config", "components", "webhook")
	data, err := os.ReadFile(filepath.Join(dir, "manifests.yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("testenv: Kueue's webhooks: %w", err)
	}
	rw := &webhookRewrite{baseURL: baseURL, ca: ca, frameworks: map[groupResource]string{}, served: map[string]bool{}}
	if rw.selectors, err = kueueWebhookNamespaceSelectors(filepath.Join(dir, "kustomization.yaml")); err != nil {
		return nil, nil, err
	}
	for _, f := range frameworks {
		rw.frameworks[frameworkResource(f)] = f
	}

	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("testenv: Kueue's webhooks: %w", err)
		}
		var meta metav1.TypeMeta
		if len(raw) == 0 || json.Unmarshal(raw, &meta) != nil {
			continue
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := json.Unmarshal(raw, mutating); err != nil {
				return nil, nil, fmt.Errorf("testenv: Kueue's webhooks: %w", err)
			}
			mutating.Name = "kueue-" + mutating.Name
			mutating.Webhooks, err = rewriteWebhooks(rw, meta.Kind, mutating.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) webhookFields {
				return webhookFields{w.Name, w.Rules, &w.ClientConfig, &w.NamespaceSelector}
			})
		case "ValidatingWebhookConfiguration":
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := json.Unmarshal(raw, validating); err != nil {
				return nil, nil, fmt.Errorf("testenv: Kueue's webhooks: %w", err)
			}
			validating.Name = "kueue-" + validating.Name
			validating.Webhooks, err = rewriteWebhooks(rw, meta.Kind, validating.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) webhookFields {
				return webhookFields{w.Name, w.Rules, &w.ClientConfig, &w.NamespaceSelector}
			})
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, errors.New("testenv: Kueue's manifests.yaml lacks a mutating or validating webhook configuration")
	}
	for _, f := range frameworks {
		if !rw.served[f] {
			return nil, nil, fmt.Errorf("testenv: no webhook in Kueue's manifests for the framework %q", f)
		}
	}
	return mutating, validating, nil
}

type groupResource struct{ group, resource string }

// webhookRewrite says which of Kueue's webhooks kueueWebhooks keeps and how
// it rewrites them.
type webhookRewrite struct {
	baseURL    string
	ca         []byte
	frameworks map[groupResource]string         // the enabled frameworks by what their webhooks intercept
	selectors  map[string]*metav1.LabelSelector // see kueueWebhookNamespaceSelectors
	served     map[string]bool                  // the frameworks a kept webhook intercepts
}

// webhookFields points into a MutatingWebhook or a ValidatingWebhook.
type webhookFields struct {
	name              string
	rules             []admissionregistrationv1.RuleWithOperations
	clientConfig      *admissionregistrationv1.WebhookClientConfig
	namespaceSelector **metav1.LabelSelector
}

// rewriteWebhooks returns the webhooks to keep, rewritten (see kueueWebhooks).
func rewriteWebhooks[W any](rw *webhookRewrite, kind string, in []W, fields func(*W) webhookFields) ([]W, error) {
	var out []W
	for _, w := range in {
		f := fields(&w)
		if !rw.keep(f.rules) {
			continue
		}
		svc := f.clientConfig.Service
		if svc == nil || svc.Path == nil {
			return nil, fmt.Errorf("testenv: Kueue's webhook %s has no service path", f.name)
		}
		url := rw.baseURL + *svc.Path
		*f.clientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: rw.ca}
		if s, ok := rw.selectors[kind+"/"+f.name]; ok {
			*f.namespaceSelector = s.DeepCopy()
		}
		out = append(out, w)
	}
	return out, nil
}

// keep reports whether a webhook with these rules is for Kueue's own objects
// or an enabled framework's, noting the framework as served.
func (rw *webhookRewrite) keep(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if g == "kueue.x-k8s.io" {
				return true
			}
			for _, res := range r.Resources {
				if f, ok := rw.frameworks[groupResource{g, res}]; ok {
					rw.served[f] = true
					return true
				}
			}
		}
	}
	return false
}

// kueueWebhookNamespaceSelectors reads the namespaceSelectors that Kueue's
// kustomization patches into some webhooks (those for pods, Deployments and
// StatefulSets: not kube-system, not kueue-system), by "<kind>/<webhook name>".
// Other fields of those patches are not applied.
func kueueWebhookNamespaceSelectors(path string) (map[string]*metav1.LabelSelector, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("testenv: Kueue's webhook kustomization: %w", err)
	}
	var kustomization struct {
		Patches []struct {
			Patch string `json:"patch"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		return nil, fmt.Errorf("testenv: %s: %w", path, err)
	}
	out := map[string]*metav1.LabelSelector{}
	for _, p := range kustomization.Patches {
		var patch struct {
			Kind     string `json:"kind"`
			Webhooks []struct {
				Name              string                `json:"name"`
				NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
			} `json:"webhooks"`
		}
		if err := yaml.Unmarshal([]byte(p.Patch), &patch); err != nil {
			return nil, fmt.Errorf("testenv: %s: %w", path, err)
		}
		for _, w := range patch.Webhooks {
			if w.NamespaceSelector != nil {
				out[patch.Kind+"/"+w.Name] = w.NamespaceSelector
			}
		}
	}
	return out, nil
}

// frameworkResource maps a Kueue integration name to the API group and
// resource its webhooks intercept: "batch/job" → batch, jobs;
// "ray.io/rayjob" → ray.io, rayjobs; the core kinds have no group in the name.
func frameworkResource(framework string) groupResource {
	switch framework {
	case "pod":
		return groupResource{"", "pods"}
	case "deployment", "statefulset":
		return groupResource{"apps", framework + "s"}
	}
	group, kind, _ := strings.Cut(framework, "/")
	return groupResource{group, kind + "s"}
}

// kueueConversions reads the CRD conversion webhooks Kueue's kustomization
// enables (config/components/crd: the patches that set spec.conversion), by CRD
// name, each called by URL on loopback with ca as its caBundle.
func kueueConversions(mod, baseURL string, ca []byte) (map[string]*apiextensionsv1.CustomResourceConversion, error) {
	dir := filepath.Join(mod, "config", "components", "crd")
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, fmt.Errorf("testenv: Kueue's CRD kustomization: %w", err)
	}
	var kustomization struct {
		Patches []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		return nil, fmt.Errorf("testenv: Kueue's CRD kustomization: %w", err)
	}
	out := map[string]*apiextensionsv1.CustomResourceConversion{}
	for _, p := range kustomization.Patches {
		if p.Path == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p.Path)))
		if err != nil {
			return nil, fmt.Errorf("testenv: Kueue's CRD patch: %w", err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("testenv: %s: %w", p.Path, err)
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			continue // not a conversion patch
		}
		svc := conv.Webhook.ClientConfig.Service
		if svc == nil || svc.Path == nil {
			return nil, fmt.Errorf("testenv: %s: conversion webhook without a service path", p.Path)
		}
		url := baseURL + *svc.Path
		conv.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: ca}
		out[crd.Name] = conv
	}
	if len(out) == 0 {
		return nil, errors.New("testenv: no conversion webhook in Kueue's CRD kustomization")
	}
	return out, nil
}

// installKueueObjects creates or replaces, in the cluster, what the manager
// expects to find: its namespace, the certificate Secret, the conversion
// webhooks of its CRDs and its admission webhook configurations. The CRDs
// must exist.
func (e *Env) installKueueObjects(ctx context.Context) error {
	k := e.operators.kueue
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testenv: creating namespace %s: %w", KueueNamespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: kueueSecretName, Namespace: KueueNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       k.certs,
	}
	if err := createOrReplace(ctx, e.Client.CoreV1().Secrets(KueueNamespace), secret); err != nil {
		return fmt.Errorf("testenv: Secret %s/%s: %w", KueueNamespace, kueueSecretName, err)
	}

	client, err := apiextensions.NewForConfig(e.RESTConfig)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range slices.Sorted(maps.Keys(k.conversions)) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			crd.Spec.Conversion = k.conversions[name].DeepCopy()
			_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("testenv: conversion webhook of CRD %s: %w", name, err)
		}
	}

	admission := e.Client.AdmissionregistrationV1()
	if err := createOrReplace(ctx, admission.MutatingWebhookConfigurations(), k.mutating.DeepCopy()); err != nil {
		return fmt.Errorf("testenv: %s: %w", k.mutating.Name, err)
	}
	if err := createOrReplace(ctx, admission.ValidatingWebhookConfigurations(), k.validating.DeepCopy()); err != nil {
		return fmt.Errorf("testenv: %s: %w", k.validating.Name, err)
	}
	return nil
}

// replacer is the part of a typed client createOrReplace uses.
type replacer[T metav1.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// createOrReplace creates obj or, when it exists, replaces it. It sets obj's
// resourceVersion.
func createOrReplace[T metav1.Object](ctx context.Context, c replacer[T], obj T) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj.SetResourceVersion("")
		_, err := c.Create(ctx, obj, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		live, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.SetResourceVersion(live.GetResourceVersion())
		_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
}

// StartKueue starts the Kueue manager (re-creating the objects it needs) and
// waits until it is ready: healthy, and its webhooks answering the API server.
// Start calls it when Options.RunKueue is set; call it again after StopKueue.
func (e *Env) StartKueue(ctx context.Context) error {
	if e.External {
		return errors.New("testenv: the cluster is external (TESTENV_KUBECONFIG), so testenv does not run its Kueue manager")
	}
	if e.operators.kueue == nil {
		return errors.New("testenv: the environment was started without Options.RunKueue")
	}
	if p := e.proc(KueueManager); p != nil && !p.Exited() {
		return errors.New("testenv: the Kueue manager is already running")
	}
	t := time.Now()
	if err := e.installKueueObjects(ctx); err != nil {
		return err
	}
	p, err := e.start(KueueManager, []string{
		"--config=" + e.operators.kueue.config,
		"--kubeconfig=" + e.Kubeconfig,
		// On by default; it would serve the visibility API with certificates
		// it writes to /visibility.
		"--feature-gates=VisibilityOnDemand=false",
	})
	if err != nil {
		return err
	}
	// /readyz turns ok once the certificates are in place, the CA is injected
	// (the manager checks every webhook configuration and converted CRD) and
	// the webhook server listens.
	if err := e.waitHTTP(ctx, p, e.operators.kueue.healthURL+"/readyz", &http.Client{Timeout: 2 * time.Second}); err != nil {
		return err
	}
	if err := e.waitKueueWebhooks(ctx, p); err != nil {
		return err
	}
	e.logf("kueue %s ready (webhooks at %s, %s)", KueueVersion, e.operators.kueue.webhookURL, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// StopKueue stops the Kueue manager only, for tests of what happens while it
// is down: its webhooks stay registered with failurePolicy Fail, so creating
// Kueue objects, or Jobs, fails until StartKueue.
func (e *Env) StopKueue() error {
	if e.External {
		return errors.New("testenv: the cluster is external (TESTENV_KUBECONFIG), so testenv does not run its Kueue manager")
	}
	p := e.proc(KueueManager)
	if p == nil || p.Exited() {
		return errors.New("testenv: the Kueue manager is not running")
	}
	p.Stop()
	return nil
}

// waitKueueWebhooks waits until the API server gets answers from Kueue's
// webhooks (see kueueAnswers), failing early if p (when not nil) exits.
func (e *Env) waitKueueWebhooks(ctx context.Context, p *process.Proc) error {
	// The v1beta1 probe would log the API server's deprecation warning.
	cfg := rest.CopyConfig(e.RESTConfig)
	cfg.WarningHandler = rest.NoWarnings{}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return e.waitWebhooks(ctx, p, KueueManager, "Kueue", func(ctx context.Context) error { return podrunner.Kueue.Answers(ctx, client) })
}

// waitWebhooks polls answers until it returns nil (the API server got
// answers from c's webhooks), failing early with c's log if p (when not nil)
// exits, and after Options.Timeout.
func (e *Env) waitWebhooks(ctx context.Context, p *process.Proc, c Component, name string, answers func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	for {
		err := answers(ctx)
		if err == nil {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("testenv: %s exited (%v) before its webhooks answered\n%s", c, p.Err(), process.LogTail(e.LogPath(c)))
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("testenv: %s's webhooks do not answer after %s (last: %v)", name, e.opts.Timeout, err)
			if p != nil {
				msg += "\n" + process.LogTail(e.LogPath(c))
			}
			return errors.New(msg)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
