package installs

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"helm.sh/helm/v3/pkg/release"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/webhookcert"
)

// aiplatform_kserve's llm_inference_service: KServe's LLMInferenceService
// charts as two more releases, <name>-llmisvc-crd (its CRDs, and the
// InferencePool and llm-d CRDs the chart carries) installed before the
// resources release, and <name>-llmisvc (the llmisvc controller, its RBAC
// and webhooks) after it: it leaves the inferenceservice-config ConfigMap and
// the default ClusterStorageContainer to KServe's release, and its controller
// reads that ConfigMap. Without cert-manager its webhook certificate is
// issued and its CA injected as for KServe's own webhooks.

// llmisvcRelease is the release of chart (KServeLLMISvcCRDChart or
// KServeLLMISvcChart) beside m's.
func llmisvcRelease(c *kube.Client, m *kserveModel, chart string) *helm.Release {
	suffix := "-llmisvc"
	if chart == helm.KServeLLMISvcCRDChart {
		suffix = "-llmisvc-crd"
	}
	return &helm.Release{Client: c, Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString() + suffix}
}

// applyRelease installs or upgrades rel with opts.
func applyRelease(ctx context.Context, rel *helm.Release, opts helm.Options) error {
	_, found, err := rel.Get(ctx)
	switch {
	case err != nil:
		return err
	case found:
		_, err = rel.Upgrade(ctx, opts)
	default:
		_, err = rel.Install(ctx, opts)
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", rel.ID(), err)
	}
	return nil
}

// prepareLLMISvc installs or upgrades the llmisvc CRD release and, without
// cert-manager, issues the llmisvc webhook certificate (before KServe's
// resources release, so that the controller starts with its CRDs served).
func prepareLLMISvc(ctx context.Context, c *kube.Client, m *kserveModel) error {
	if !m.LLMService.ValueBool() {
		return nil
	}
	ch, err := helm.LoadChart(siblingSource(kserveSource(m), helm.KServeLLMISvcCRDChart))
	if err != nil {
		return err
	}
	if err := applyRelease(ctx, llmisvcRelease(c, m, helm.KServeLLMISvcCRDChart), helm.Options{Chart: ch, Timeout: opTimeout(ctx)}); err != nil {
		return fmt.Errorf("KServe's LLMInferenceService CRDs: %w", err)
	}
	c.ResetDiscovery()
	if m.CertManager.ValueBool() {
		return nil
	}
	return ensureWebhookCert(ctx, c, m.Namespace.ValueString(), helm.KServeLLMWebhookSecret, helm.KServeLLMWebhookService)
}

// finishLLMISvc installs or upgrades the llmisvc controller's release (its
// install waits until the controller is ready) and injects the CA into its
// webhooks; with llm_inference_service off it removes both llmisvc
// releases, if there.
func finishLLMISvc(ctx context.Context, c *kube.Client, m *kserveModel) error {
	if !m.LLMService.ValueBool() {
		return removeLLMISvc(ctx, c, m)
	}
	ch, err := helm.LoadChart(siblingSource(kserveSource(m), helm.KServeLLMISvcChart))
	if err != nil {
		return err
	}
	cfg, _ := kserveConfig(m)
	kc := cfg.(helm.KServeConfig)
	vals, err := kc.LLMISvcValues()
	if err != nil {
		return err
	}
	opts := helm.Options{Chart: ch, Values: vals, Timeout: opTimeout(ctx), Omit: kc.Omit()}
	if err := applyRelease(ctx, llmisvcRelease(c, m, helm.KServeLLMISvcChart), opts); err != nil {
		return fmt.Errorf("KServe's LLMInferenceService controller: %w", err)
	}
	if m.CertManager.ValueBool() {
		return nil
	}
	return injectWebhookCA(ctx, c, m.Namespace.ValueString(), helm.KServeLLMWebhookSecret, helm.KServeLLMWebhookService)
}

// removeLLMISvc uninstalls the llmisvc controller's release, then its CRD
// release (the CRDs go with remove_crds only), and the issued Secret.
func removeLLMISvc(ctx context.Context, c *kube.Client, m *kserveModel) error {
	for _, chart := range []string{helm.KServeLLMISvcChart, helm.KServeLLMISvcCRDChart} {
		rel := llmisvcRelease(c, m, chart)
		_, found, err := rel.Get(ctx)
		if err != nil {
			return err
		}
		if found {
			if err := rel.Uninstall(ctx, m.RemoveCRDs.ValueBool(), opTimeout(ctx)); err != nil {
				return err
			}
		}
	}
	if m.CertManager.ValueBool() {
		return nil
	}
	return c.DeleteSecret(ctx, kube.Ref{Namespace: m.Namespace.ValueString(), Name: helm.KServeLLMWebhookSecret})
}

// llmisvcDrift: both llmisvc releases' drift and, without cert-manager,
// llmisvc webhooks without the CA (nothing with llm_inference_service off).
func llmisvcDrift(ctx context.Context, c *kube.Client, m *kserveModel) ([]string, error) {
	if !m.LLMService.ValueBool() {
		return nil, nil
	}
	var lines []string
	for _, chart := range []string{helm.KServeLLMISvcCRDChart, helm.KServeLLMISvcChart} {
		rel := llmisvcRelease(c, m, chart)
		cur, found, err := rel.Get(ctx)
		if err != nil {
			return nil, err
		}
		if !found || cur.Info.Status != release.StatusDeployed {
			lines = append(lines, fmt.Sprintf("Release %s (KServe's %s): missing or not deployed", rel.ID(), chart))
			continue
		}
		rep, err := rel.Drift(ctx, cur)
		if err != nil {
			return nil, err
		}
		lines = append(lines, rep.Lines...)
	}
	if m.CertManager.ValueBool() {
		return lines, nil
	}
	more, err := webhookCADrift(ctx, c, m.Namespace.ValueString(), helm.KServeLLMWebhookSecret, helm.KServeLLMWebhookService)
	return append(lines, more...), err
}

// ensureWebhookCert makes sure Secret ns/secret holds a certificate for
// Service ns/service valid for certRenewal more.
func ensureWebhookCert(ctx context.Context, c *kube.Client, ns, secret, service string) error {
	ref := kube.Ref{Namespace: ns, Name: secret}
	data := map[string][]byte{}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if v, found, err := c.SecretData(ctx, ref, k); err != nil {
			return err
		} else if found {
			data[k] = v
		}
	}
	if webhookcert.Check(data, service+"."+ns+".svc", time.Now().Add(certRenewal)) == "" {
		return nil
	}
	b, err := webhookcert.Issue(webhookcert.DNSNames(service, ns), time.Now(), certValidity)
	if err != nil {
		return err
	}
	return c.ApplySecret(ctx, ref, map[string]string{"app.kubernetes.io/managed-by": "terraform-provider-aiplatform"}, b.Data())
}

// injectWebhookCA puts Secret ns/secret's CA into the webhooks of Service
// ns/service, then waits until they answer (the release's own wait leaves
// webhooks without a caBundle to this).
func injectWebhookCA(ctx context.Context, c *kube.Client, ns, secret, service string) error {
	ca, found, err := c.SecretData(ctx, kube.Ref{Namespace: ns, Name: secret}, "ca.crt")
	if err != nil || !found {
		return fmt.Errorf("the webhook certificate Secret %s/%s: found %v, %v", ns, secret, found, err)
	}
	if _, err = c.InjectCABundle(ctx, ns, service, ca); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout(ctx))
	defer cancel()
	if err := c.WaitServiceWebhooks(ctx, ns, service, func(m string) { tflog.Info(ctx, m) }); err != nil {
		return fmt.Errorf("the webhooks of Service %s/%s: %w", ns, service, err)
	}
	return nil
}

// webhookCADrift: the Secret missing, or the webhooks of Service ns/service
// whose caBundle is not its CA.
func webhookCADrift(ctx context.Context, c *kube.Client, ns, secret, service string) ([]string, error) {
	ca, found, err := c.SecretData(ctx, kube.Ref{Namespace: ns, Name: secret}, "ca.crt")
	if err != nil {
		return nil, err
	}
	if !found {
		return []string{fmt.Sprintf("Secret/%s/%s: the webhook certificate is missing", ns, secret)}, nil
	}
	hooks, err := c.WebhooksWithoutCA(ctx, ns, service, ca)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, h := range hooks {
		lines = append(lines, fmt.Sprintf("webhook %s: caBundle is not the CA of Secret %s/%s", h, ns, secret))
	}
	return lines, nil
}
