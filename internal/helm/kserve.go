package helm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// KServe is KServe's resources chart (catalog.KServe). KServe ships its CRDs
// as separate charts: KServeCRDs (and, for LLMInferenceService,
// KServeLLMISvcCRDs and KServeLLMISvc), installed beside this one as
// releases of their own.
var KServe = chartOf(catalog.KServe)

// KServe's other charts, each a release of its own: the name of each is its
// release's name suffix and the chart's name.
const (
	KServeCRDChart          = "kserve-crd"
	KServeLLMISvcCRDChart   = "kserve-llmisvc-crd"
	KServeLLMISvcChart      = "kserve-llmisvc-resources"
	KServeResourcesChart    = "kserve-resources"
	KServeWebhookSecret     = "kserve-webhook-server-cert"
	KServeWebhookService    = "kserve-webhook-server-service"
	KServeLLMWebhookSecret  = "llmisvc-webhook-server-cert"
	KServeLLMWebhookService = "llmisvc-webhook-server-service"
)

// KServe deployment modes (the inferenceservice-config's
// deploy.defaultDeploymentMode): Standard is plain Deployments, Services
// and HPAs; Knative needs Knative Serving (and an ingress such as Istio).
// "RawDeployment" and "Serverless" are their deprecated names.
var KServeDeploymentModes = []string{"Standard", "Knative"}

// KServeConfig is aiplatform_kserve's typed configuration: what it writes
// into the values of the resources charts.
type KServeConfig struct {
	// DeploymentMode is KServe's default deployment mode (Standard or
	// Knative). The chart's own default is Knative.
	DeploymentMode string
	// LLMInferenceService installs the LLMInferenceService CRDs and
	// controller (the llmisvc charts) too.
	LLMInferenceService bool
	// Ingress: KServe creates an Ingress (or Gateway API route) per
	// InferenceService; off sets gateway.disableIngressCreation.
	Ingress bool
	// GatewayAPI: routes through the Gateway API (HTTPRoute) instead of
	// Ingress objects (ingressGateway.enableGatewayApi).
	GatewayAPI bool
	// CertManager: cert-manager issues the webhook certificates (the
	// chart's Issuer and Certificate); off, the provider issues them.
	CertManager bool
	// Requests are the controller's resource requests (and limits, the
	// same), e.g. {"cpu": "100m", "memory": "300Mi"}; empty keeps the
	// chart's.
	Requests map[string]string
}

// Values writes the configuration into the resources chart's values (raw
// is the user's values document; the typed settings win).
func (c KServeConfig) Values(_, raw map[string]any) (map[string]any, error) {
	if c.DeploymentMode != "" && !slices.Contains(KServeDeploymentModes, c.DeploymentMode) {
		return nil, fmt.Errorf("deployment mode %q: one of %s", c.DeploymentMode, strings.Join(KServeDeploymentModes, ", "))
	}
	out := Merge(map[string]any{}, raw)
	if c.DeploymentMode != "" {
		SetPath(out, c.DeploymentMode, "kserve", "controller", "deploymentMode")
	}
	SetPath(out, !c.Ingress, "kserve", "controller", "gateway", "disableIngressCreation")
	SetPath(out, c.GatewayAPI, "kserve", "controller", "gateway", "ingressGateway", "enableGatewayApi")
	// `certManager.enabled: false` alone renders the Issuer and Certificate
	// anyway: the chart's condition is `enabled | default
	// createSharedResources`, and default treats false as unset. So the
	// shared resources are switched off and the ConfigMap and default
	// ClusterStorageContainer asked for one by one.
	SetPath(out, false, "kserve", "createSharedResources")
	SetPath(out, c.CertManager, "kserve", "certManager", "enabled")
	SetPath(out, true, "kserve", "inferenceServiceConfig", "enabled")
	SetPath(out, true, "kserve", "storagecontainer", "enabled")
	// Recorded for import: the llmisvc charts are releases of their own.
	SetPath(out, c.LLMInferenceService, "aiplatform", "llmInferenceService")
	if len(c.Requests) > 0 {
		res := map[string]any{}
		for k, v := range c.Requests {
			res[k] = v
		}
		for _, p := range [][]string{{"kserve", "controller", "resources"}, {"kserve", "llmisvc", "controller", "resources"}} {
			SetPath(out, map[string]any{"requests": maps.Clone(res), "limits": maps.Clone(res)}, p...)
		}
	}
	return out, nil
}

// LLMISvcValues are the values of the kserve-llmisvc-resources chart: the
// resources chart's typed settings without the objects KServe's release
// already owns (the inferenceservice-config ConfigMap and the default
// ClusterStorageContainer, which both charts render: Helm refuses to take
// over another release's object).
func (c KServeConfig) LLMISvcValues() (map[string]any, error) {
	out, err := c.Values(nil, nil)
	if err != nil {
		return nil, err
	}
	delete(out, "aiplatform")
	SetPath(out, false, "kserve", "inferenceServiceConfig", "enabled")
	SetPath(out, false, "kserve", "storagecontainer", "enabled")
	return out, nil
}

// Omit are the API groups of objects the resources chart renders that the
// release leaves out (Options.Omit): without cert-manager, its Certificate
// (kserve-resources v0.20.0 renders serving-cert whatever the values say; only
// the Issuer follows certManager.enabled).
func (c KServeConfig) Omit() []string {
	if c.CertManager {
		return nil
	}
	return []string{"cert-manager.io"}
}

// KServeConfigFromValues reads the typed configuration back from a release's
// values (import).
func KServeConfigFromValues(values map[string]any) KServeConfig {
	c := KServeConfig{DeploymentMode: "Knative"}
	if m, ok := GetPath(values, "kserve", "controller", "deploymentMode").(string); ok && m != "" {
		c.DeploymentMode = m
	}
	switch c.DeploymentMode {
	case "RawDeployment":
		c.DeploymentMode = "Standard"
	case "Serverless":
		c.DeploymentMode = "Knative"
	}
	disabled, _ := GetPath(values, "kserve", "controller", "gateway", "disableIngressCreation").(bool)
	c.Ingress = !disabled
	c.GatewayAPI, _ = GetPath(values, "kserve", "controller", "gateway", "ingressGateway", "enableGatewayApi").(bool)
	c.CertManager, _ = GetPath(values, "kserve", "certManager", "enabled").(bool)
	c.LLMInferenceService, _ = GetPath(values, "aiplatform", "llmInferenceService").(bool)
	if req, ok := GetPath(values, "kserve", "controller", "resources", "requests").(map[string]any); ok {
		c.Requests = map[string]string{}
		for k, v := range req {
			c.Requests[k] = fmt.Sprint(v)
		}
	}
	return c
}

// KServe's presence in a cluster: its controller's Deployment, and the
// Knative Serving API that the Knative deployment mode needs.
var (
	kserveInferenceServices = catalog.InferenceServiceKind
	knativeServices         = kube.Kind{Group: "serving.knative.dev", Version: "v1", Resource: "services", Kind: "Service"}
)

const (
	kserveDeployment = "kserve-controller-manager"
	kserveLabels     = "control-plane=kserve-controller-manager"
)

// LiveKServe finds the KServe controllers in the cluster by their
// Deployments, whoever installed them.
func LiveKServe(ctx context.Context, c *kube.Client) ([]Install, error) {
	return liveDeployments(ctx, c, KServe.Product, kserveDeployment, kserveLabels)
}

// KnativeServingServed tells whether the cluster serves Knative Serving's
// Service (serving.knative.dev/v1).
func KnativeServingServed(ctx context.Context, c *kube.Client) (bool, error) {
	return c.Served(ctx, knativeServices)
}

// KServeServed tells whether the cluster serves InferenceServices.
func KServeServed(ctx context.Context, c *kube.Client) (bool, error) {
	return c.Served(ctx, kserveInferenceServices)
}

// errNoKServeConfig is a planned KServe install without its configuration.
var errNoKServeConfig = errors.New("KServe install without a KServeConfig")

func kserveConfigOf(in Install) (KServeConfig, error) {
	switch cfg := in.Config.(type) {
	case KServeConfig:
		return cfg, nil
	case *KServeConfig:
		return *cfg, nil
	}
	return KServeConfig{}, errNoKServeConfig
}
