package installs

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// aiplatform_kserve: KServe's resources chart as the resource's release,
// its CRD chart as a second release (<name>-crd, installed first: the
// resources chart renders a ClusterStorageContainer, which needs the CRD
// served before Helm maps it), and, without cert-manager, the webhook
// certificate the provider issues and the CA it injects into KServe's
// webhooks.

type kserveModel struct {
	releaseModel
	DeploymentMode types.String `tfsdk:"deployment_mode"`
	Ingress        types.Bool   `tfsdk:"ingress"`
	GatewayAPI     types.Bool   `tfsdk:"gateway_api"`
	CertManager    types.Bool   `tfsdk:"cert_manager"`
	Requests       types.Map    `tfsdk:"controller_requests"`
	LLMService     types.Bool   `tfsdk:"llm_inference_service"`
}

// certRenewal: a webhook certificate that expires sooner is issued again at
// the next apply; certValidity is how long an issued one lasts.
const (
	certRenewal  = 30 * 24 * time.Hour
	certValidity = 365 * 24 * time.Hour
)

// NewKServe is aiplatform_kserve.
func NewKServe() resource.Resource {
	return newRelease[kserveModel](chartSpec[kserveModel]{
		TypeName: "kserve",
		Chart:    helm.KServe,
		Description: "KServe (InferenceService, ServingRuntime, ClusterServingRuntime, TrainedModel, InferenceGraph) installed " +
			"from its Helm charts with the Helm SDK: the `kserve-crd` chart as release `<name>-crd`, then the `kserve-resources` " +
			"chart (the controller manager, its RBAC, webhooks and the `inferenceservice-config` ConfigMap) as release `<name>`. " +
			"Install and upgrade are atomic and wait until every object is ready; every refresh compares each object of both " +
			"releases with the live cluster (`drift`).\n\n" +
			"**Deployment mode**: `Standard` (the default here) serves each InferenceService as a Deployment, a Service and an " +
			"HPA — no Knative, no Istio. `Knative` needs Knative Serving: KServe v0.20 fails every InferenceService in that mode " +
			"when `serving.knative.dev/v1` is not served, so the plan refuses it then. KServe's own chart defaults to Knative.\n\n" +
			"**Certificates**: KServe manages no webhook certificate itself; its chart expects cert-manager. With " +
			"`cert_manager = false` (the default) the provider issues one (a CA of its own, a year's validity, issued again at the " +
			"first apply within 30 days of expiry) into the Secret `kserve-webhook-server-cert`, injects the CA into KServe's " +
			"webhooks, and leaves out the chart's `Certificate`, which KServe v0.20's chart renders whatever its values say. A " +
			"webhook whose CA was changed shows in `drift`.\n\n" +
			"**One KServe per cluster**: its CRDs and webhook configurations have fixed names; the plan fails when another KServe " +
			"controller runs or is planned.",
		Attributes: map[string]schema.Attribute{
			"deployment_mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("Standard"),
				MarkdownDescription: "KServe's default deployment mode: `Standard` (Deployments, Services, HPAs) or `Knative` (needs Knative Serving). Default `\"Standard\"`.",
				Validators:          []validator.String{stringvalidator.OneOf(helm.KServeDeploymentModes...)}},
			"ingress": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Create an Ingress (or, with `gateway_api`, an HTTPRoute) per InferenceService. Default `false`: the predictor's Service only."},
			"gateway_api": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Route through the Gateway API (HTTPRoute) instead of Ingress objects; needs `ingress = true`. Default `false`."},
			"cert_manager": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Let cert-manager issue the webhook certificate (the chart's Issuer and Certificate; cert-manager must be installed). Default `false`: the provider issues it."},
			"llm_inference_service": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Install KServe's LLMInferenceService too: the `kserve-llmisvc-crd` chart as release `<name>-llmisvc-crd` " +
					"(before the resources release) and the `kserve-llmisvc-resources` chart (the llmisvc controller, its RBAC and webhooks) " +
					"as release `<name>-llmisvc` (after it: it leaves the `inferenceservice-config` ConfigMap and the default " +
					"ClusterStorageContainer to KServe's release), with the same typed settings (not `values`), readiness wait, `drift` " +
					"and, without cert-manager, its own issued webhook certificate (`llmisvc-webhook-server-cert`). Turning it off " +
					"uninstalls both (the CRDs stay unless `remove_crds`). Default `false`."},
			"controller_requests": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Resource requests (and the same limits) of KServe's controller, e.g. `{ cpu = \"100m\", memory = \"300Mi\" }`. Default: the chart's (100m, 300Mi)."},
		},
		Config:     kserveConfig,
		FromValues: kserveFromValues,
		Validate:   validateKServe,
		Load:       loadKServeChart,
		Omit:       func(m *kserveModel) []string { cfg, _ := kserveConfig(m); return cfg.(helm.KServeConfig).Omit() },
		Prepare:    prepareKServe,
		Finish:     finishKServe,
		Drift:      kserveDrift,
		Cleanup:    cleanupKServe,
	})
}

func kserveConfig(m *kserveModel) (helm.Config, bool) {
	cfg := helm.KServeConfig{
		DeploymentMode:      m.DeploymentMode.ValueString(),
		Ingress:             m.Ingress.ValueBool(),
		GatewayAPI:          m.GatewayAPI.ValueBool(),
		CertManager:         m.CertManager.ValueBool(),
		LLMInferenceService: m.LLMService.ValueBool(),
	}
	if !m.Requests.IsNull() {
		cfg.Requests = map[string]string{}
		for k, v := range m.Requests.Elements() {
			if s, ok := v.(types.String); ok {
				cfg.Requests[k] = s.ValueString()
			}
		}
	}
	return cfg, !m.DeploymentMode.IsUnknown()
}

func kserveFromValues(values map[string]any, m *kserveModel) {
	cfg := helm.KServeConfigFromValues(values)
	m.DeploymentMode = types.StringValue(cfg.DeploymentMode)
	m.Ingress = types.BoolValue(cfg.Ingress)
	m.GatewayAPI = types.BoolValue(cfg.GatewayAPI)
	m.CertManager = types.BoolValue(cfg.CertManager)
	m.LLMService = types.BoolValue(cfg.LLMInferenceService)
	if len(cfg.Requests) > 0 {
		m.Requests, _ = types.MapValueFrom(context.Background(), types.StringType, cfg.Requests)
	} else {
		m.Requests = types.MapNull(types.StringType)
	}
}

func validateKServe(m *kserveModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.GatewayAPI.ValueBool() && !m.Ingress.IsUnknown() && !m.Ingress.ValueBool() {
		diags.AddAttributeError(path.Root("gateway_api"), "gateway_api without ingress",
			"gateway_api = true routes InferenceServices through HTTPRoutes, which KServe creates only with ingress = true.")
	}
	return diags
}

// crdRelease is the release of KServe's CRD chart beside m's.
func crdRelease(c *kube.Client, m *kserveModel) *helm.Release {
	return &helm.Release{Client: c, Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString() + "-crd"}
}

// crdSource is the CRD chart beside the resources chart src: the sibling
// directory kserve-crd of a local chart, or kserve-crd in the same
// repository at the same version.
func crdSource(src helm.Source) helm.Source { return siblingSource(src, helm.KServeCRDChart) }

// siblingSource is KServe's chart name beside the resources chart src: the
// sibling directory of a local chart, or the chart of that name in the same
// repository at the same version.
func siblingSource(src helm.Source, name string) helm.Source {
	if src.Path != "" {
		return helm.Source{Path: filepath.Join(filepath.Dir(filepath.Clean(src.Path)), name), Version: src.Version}
	}
	src.Name = name
	return src
}

// loadKServeChart loads the resources chart and, first, checks that the CRD
// chart beside it loads too.
func loadKServeChart(src helm.Source, m *kserveModel) (*chart.Chart, error) {
	others := []string{helm.KServeCRDChart}
	if m.LLMService.ValueBool() {
		others = append(others, helm.KServeLLMISvcCRDChart, helm.KServeLLMISvcChart)
	}
	for _, name := range others {
		if _, err := helm.LoadChart(siblingSource(src, name)); err != nil {
			return nil, fmt.Errorf("KServe's chart %s: %w", siblingSource(src, name), err)
		}
	}
	return helm.LoadChart(src)
}

// kserveSource is m's resources chart source.
func kserveSource(m *kserveModel) helm.Source { return chartSource(helm.KServe, &m.releaseModel) }

// prepareKServe installs or upgrades the CRD release, then, without
// cert-manager, makes sure the webhook Secret holds a certificate for the
// webhook Service that is valid for certRenewal more.
func prepareKServe(ctx context.Context, c *kube.Client, m *kserveModel) error {
	ch, err := helm.LoadChart(crdSource(kserveSource(m)))
	if err != nil {
		return err
	}
	rel := crdRelease(c, m)
	opts := helm.Options{Chart: ch, Timeout: opTimeout(ctx)}
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
		return fmt.Errorf("KServe's CRD release %s: %w", rel.ID(), err)
	}
	c.ResetDiscovery() // the resources chart's ClusterStorageContainer needs the new CRD mapped
	if err := prepareLLMISvc(ctx, c, m); err != nil {
		return err
	}
	if m.CertManager.ValueBool() {
		return nil
	}
	return ensureWebhookCert(ctx, c, m.Namespace.ValueString(), helm.KServeWebhookSecret, helm.KServeWebhookService)
}

// finishKServe injects the webhook Secret's CA into KServe's webhooks, then
// installs, upgrades or removes the llmisvc controller's release.
func finishKServe(ctx context.Context, c *kube.Client, m *kserveModel) error {
	if !m.CertManager.ValueBool() {
		if err := injectWebhookCA(ctx, c, m.Namespace.ValueString(), helm.KServeWebhookSecret, helm.KServeWebhookService); err != nil {
			return err
		}
	}
	return finishLLMISvc(ctx, c, m)
}

// kserveDrift is the CRD release's drift and, without cert-manager, the
// webhooks whose caBundle is not the webhook Secret's CA.
func kserveDrift(ctx context.Context, c *kube.Client, m *kserveModel) ([]string, error) {
	rel := crdRelease(c, m)
	cur, found, err := rel.Get(ctx)
	if err != nil {
		return nil, err
	}
	var lines []string
	if !found || cur.Info.Status != release.StatusDeployed {
		lines = append(lines, fmt.Sprintf("Release %s (KServe's CRDs): missing or not deployed", rel.ID()))
	} else {
		rep, err := rel.Drift(ctx, cur)
		if err != nil {
			return nil, err
		}
		lines = append(lines, rep.Lines...)
	}
	more, err := llmisvcDrift(ctx, c, m)
	if err != nil {
		return nil, err
	}
	lines = append(lines, more...)
	if m.CertManager.ValueBool() {
		return lines, nil
	}
	more, err = webhookCADrift(ctx, c, m.Namespace.ValueString(), helm.KServeWebhookSecret, helm.KServeWebhookService)
	return append(lines, more...), err
}

// cleanupKServe uninstalls the CRD release (its CRDs stay unless
// remove_crds) and removes the issued webhook Secret.
func cleanupKServe(ctx context.Context, c *kube.Client, m *kserveModel) error {
	if err := removeLLMISvc(ctx, c, m); err != nil {
		return err
	}
	rel := crdRelease(c, m)
	if _, found, err := rel.Get(ctx); err != nil || !found {
		return err
	}
	if err := rel.Uninstall(ctx, m.RemoveCRDs.ValueBool(), opTimeout(ctx)); err != nil {
		return err
	}
	if m.CertManager.ValueBool() {
		return nil
	}
	return c.DeleteSecret(ctx, kube.Ref{Namespace: m.Namespace.ValueString(), Name: helm.KServeWebhookSecret})
}
