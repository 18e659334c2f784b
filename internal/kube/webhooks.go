package kube

import (
	"bytes"
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Webhook CA bundles: what cert-manager's CA injector does for a chart whose
// webhooks have no caBundle of their own (KServe's without cert-manager).

// CAInjector is the field manager of injected caBundles: not FieldManager,
// whose server-side applies of a chart's rendered webhooks (which have no
// caBundle) would otherwise remove them.
const CAInjector = "terraform-provider-aiplatform-ca-injector"

// callsService reports whether a webhook's client config calls that Service.
func callsService(cc admissionv1.WebhookClientConfig, namespace, service string) bool {
	return cc.Service != nil && cc.Service.Namespace == namespace && cc.Service.Name == service
}

// InjectCABundle sets ca as the caBundle of every mutating and validating
// admission webhook that calls the Service namespace/service, and returns
// how many webhooks call it. Configurations that have it already are left
// alone.
func (c *Client) InjectCABundle(ctx context.Context, namespace, service string, ca []byte) (int, error) {
	typed, err := c.Typed()
	if err != nil {
		return 0, err
	}
	reg := typed.AdmissionregistrationV1()
	n := 0
	mutating, err := reg.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing mutating webhook configurations: %w", err)
	}
	for _, cfg := range mutating.Items {
		changed := false
		for i := range cfg.Webhooks {
			cc := &cfg.Webhooks[i].ClientConfig
			if callsService(*cc, namespace, service) {
				n++
				if !bytes.Equal(cc.CABundle, ca) {
					cc.CABundle, changed = ca, true
				}
			}
		}
		if changed {
			if _, err := reg.MutatingWebhookConfigurations().Update(ctx, &cfg, metav1.UpdateOptions{FieldManager: CAInjector}); err != nil {
				return n, fmt.Errorf("mutating webhook configuration %s: %w", cfg.Name, err)
			}
		}
	}
	validating, err := reg.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return n, fmt.Errorf("listing validating webhook configurations: %w", err)
	}
	for _, cfg := range validating.Items {
		changed := false
		for i := range cfg.Webhooks {
			cc := &cfg.Webhooks[i].ClientConfig
			if callsService(*cc, namespace, service) {
				n++
				if !bytes.Equal(cc.CABundle, ca) {
					cc.CABundle, changed = ca, true
				}
			}
		}
		if changed {
			if _, err := reg.ValidatingWebhookConfigurations().Update(ctx, &cfg, metav1.UpdateOptions{FieldManager: CAInjector}); err != nil {
				return n, fmt.Errorf("validating webhook configuration %s: %w", cfg.Name, err)
			}
		}
	}
	return n, nil
}

// WebhooksWithoutCA lists the admission webhooks (configuration/webhook)
// that call the Service namespace/service without ca as their caBundle.
func (c *Client) WebhooksWithoutCA(ctx context.Context, namespace, service string, ca []byte) ([]string, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	reg := typed.AdmissionregistrationV1()
	var out []string
	mutating, err := reg.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, cfg := range mutating.Items {
		for _, w := range cfg.Webhooks {
			if callsService(w.ClientConfig, namespace, service) && !bytes.Equal(w.ClientConfig.CABundle, ca) {
				out = append(out, cfg.Name+"/"+w.Name)
			}
		}
	}
	validating, err := reg.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, cfg := range validating.Items {
		for _, w := range cfg.Webhooks {
			if callsService(w.ClientConfig, namespace, service) && !bytes.Equal(w.ClientConfig.CABundle, ca) {
				out = append(out, cfg.Name+"/"+w.Name)
			}
		}
	}
	return out, nil
}
