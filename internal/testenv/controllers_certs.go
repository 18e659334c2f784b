package testenv

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/webhookcert"
)

// What cert-manager does for a chart that relies on it (KServe's): the
// webhook serving certificates (podrunner.Install.WebhookCerts), written
// before the install, and their CA injected into the webhooks after it.

// provideWebhookCerts creates the namespace and, for each of the adapter's
// WebhookCerts, a kubernetes.io/tls Secret for its Service's DNS names; it
// returns the CA of each Service.
func (e *Env) provideWebhookCerts(ctx context.Context, a *podrunner.Adapter) (map[string][]byte, error) {
	if len(a.Install.WebhookCerts) == 0 {
		return nil, nil
	}
	ns := a.Install.Namespace
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("testenv: namespace %s for %s's webhook certificates: %w", ns, a.Name, err)
	}
	cas := map[string][]byte{}
	for _, wc := range a.Install.WebhookCerts {
		b, err := webhookcert.Issue(webhookcert.DNSNames(wc.Service, ns), time.Now(), 365*24*time.Hour)
		if err != nil {
			return nil, err
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: wc.Secret, Namespace: ns},
			Type:       corev1.SecretTypeTLS,
			Data:       b.Data(),
		}
		if _, err := e.Client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("testenv: %s's webhook certificate Secret %s/%s: %w", a.Name, ns, wc.Secret, err)
		}
		cas[wc.Service] = b.CA
	}
	return cas, nil
}

// injectCABundles sets the CA of each Service in the caBundle of every
// webhook that calls it (package kube).
func (e *Env) injectCABundles(ctx context.Context, a *podrunner.Adapter, cas map[string][]byte) error {
	client := kube.NewClientFromREST(e.RESTConfig, false)
	for svc, ca := range cas {
		n, err := client.InjectCABundle(ctx, a.Install.Namespace, svc, ca)
		if err != nil {
			return fmt.Errorf("testenv: %s's webhooks: %w", a.Name, err)
		}
		e.logf("%s: CA of Service %s/%s injected into %d webhooks", a.Name, a.Install.Namespace, svc, n)
	}
	return nil
}

// installCRDChart installs the adapter's CRD chart (Install.CRDChart) as
// release <Release>-crd.
func (e *Env) installCRDChart(ctx context.Context, client *kube.Client, a *podrunner.Adapter) error {
	if a.Install.CRDChart == (podrunner.Source{}) {
		return nil
	}
	dir, err := a.Install.CRDChart.Path(ctx)
	if err != nil {
		return err
	}
	ch, err := helm.LoadChart(helm.Source{Path: dir})
	if err != nil {
		return err
	}
	rel := &helm.Release{Client: client, Namespace: a.Install.Namespace, Name: a.Install.Release + "-crd", Log: func(m string) { e.logf("%s: %s", a.Name, m) }}
	if _, err := rel.Install(ctx, helm.Options{Chart: ch, Timeout: e.controllerTimeout()}); err != nil {
		return fmt.Errorf("testenv: installing %s's CRD chart: %w", a.Name, err)
	}
	// The chart's release maps its kinds through the client's cached
	// discovery, which predates these CRDs.
	client.ResetDiscovery()
	return nil
}
