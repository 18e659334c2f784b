package provider

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
)

var objectAsOptions = basetypes.ObjectAsOptions{}

// Configure builds the client without contacting the cluster. Three cases:
//   - the connection is known: a client for it (or, with nothing configured
//     outside a pod, a client whose every request fails with
//     kube.ErrNotConfigured, so what needs no cluster still works);
//   - a connection attribute is unknown (the cluster is created in the same
//     apply): Terraform is asked to defer when it can; otherwise resources get
//     no client, so their plans leave live-derived values unknown, and data
//     sources that read the cluster fail saying why. Never a fallback to
//     another cluster;
//   - the configuration is invalid: a diagnostic.
func (p *aiplatform) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	if unknown := unknownConnection(req.Config.Raw); len(unknown) > 0 {
		if req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
			return
		}
		resp.DataSourceData = kube.NotConfigured(fmt.Errorf("the aiplatform provider's connection (%s) is known only after apply, "+
			"so this data source cannot read the cluster during this plan: apply what creates the cluster first "+
			"(terraform apply -target=...), then plan again", strings.Join(unknown, ", ")))
		return // resources get no client: their live-derived values stay unknown
	}
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg, diags := p.kubeConfig(ctx, m, req.TerraformVersion)
	if resp.Diagnostics.Append(diags...); diags.HasError() {
		return
	}
	client, err := kube.NewClient(cfg)
	switch {
	case errors.Is(err, kube.ErrNotConfigured):
		client = kube.NotConfigured(err)
	case err != nil:
		resp.Diagnostics.AddError("Invalid Kubernetes connection configuration", err.Error())
		return
	}
	resp.ResourceData = client
	resp.DataSourceData = client
}

// unknownConnection names the connection attributes whose value is not known
// yet (wholly or in part).
func unknownConnection(config tftypes.Value) []string {
	var attrs map[string]tftypes.Value
	if !config.IsKnown() {
		return []string{"the provider block"}
	}
	if err := config.As(&attrs); err != nil {
		return nil
	}
	var unknown []string
	for name, v := range attrs {
		if !settingAttributes[name] && !v.IsFullyKnown() {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	return unknown
}

// kubeConfig reads the model, falling back to hashicorp/kubernetes'
// environment variables for attributes that are not set.
func (p *aiplatform) kubeConfig(ctx context.Context, m providerModel, terraformVersion string) (kube.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	cfg := kube.Config{
		ConfigPath:            stringOr(m.ConfigPath, "KUBE_CONFIG_PATH"),
		ConfigContext:         stringOr(m.ConfigContext, "KUBE_CTX"),
		ConfigContextAuthInfo: stringOr(m.ConfigContextAuthInfo, "KUBE_CTX_AUTH_INFO"),
		ConfigContextCluster:  stringOr(m.ConfigContextCluster, "KUBE_CTX_CLUSTER"),
		Host:                  stringOr(m.Host, "KUBE_HOST"),
		Username:              stringOr(m.Username, "KUBE_USER"),
		Password:              stringOr(m.Password, "KUBE_PASSWORD"),
		Token:                 stringOr(m.Token, "KUBE_TOKEN"),
		ClusterCACertificate:  stringOr(m.ClusterCACertificate, "KUBE_CLUSTER_CA_CERT_DATA"),
		ClientCertificate:     stringOr(m.ClientCertificate, "KUBE_CLIENT_CERT_DATA"),
		ClientKey:             stringOr(m.ClientKey, "KUBE_CLIENT_KEY_DATA"),
		Insecure:              boolOr(m.Insecure, "KUBE_INSECURE"),
		TLSServerName:         stringOr(m.TLSServerName, "KUBE_TLS_SERVER_NAME"),
		ProxyURL:              stringOr(m.ProxyURL, "KUBE_PROXY_URL"),
		ForceConflicts:        m.ForceConflicts.ValueBool(),
		UserAgent:             userAgent(p.version, terraformVersion),
		WrapTransport:         telemetry.RequestLogTransport(), // nil unless AIPLATFORM_REQUEST_LOG is set
	}
	// An attribute wins over any variable; KUBE_CONFIG_PATH over
	// KUBE_CONFIG_PATHS, as in hashicorp/kubernetes.
	switch {
	case !m.ConfigPaths.IsNull():
		cfg.ConfigPath = "" // config_path conflicts with config_paths: only the variable can be set here
		diags.Append(m.ConfigPaths.ElementsAs(ctx, &cfg.ConfigPaths, false)...)
	case cfg.ConfigPath == "":
		cfg.ConfigPaths = filepath.SplitList(os.Getenv("KUBE_CONFIG_PATHS"))
	}
	if !m.RequestTimeout.IsNull() && !m.RequestTimeout.IsUnknown() {
		cfg.Timeout, _ = time.ParseDuration(m.RequestTimeout.ValueString()) // validated at plan
	}
	if !m.Exec.IsNull() {
		var e execModel
		if diags.Append(m.Exec.As(ctx, &e, objectAsOptions)...); diags.HasError() {
			return cfg, diags
		}
		cfg.Exec = &kube.ExecConfig{APIVersion: e.APIVersion.ValueString(), Command: e.Command.ValueString(), Env: map[string]string{}}
		diags.Append(e.Args.ElementsAs(ctx, &cfg.Exec.Args, false)...)
		diags.Append(e.Env.ElementsAs(ctx, &cfg.Exec.Env, false)...)
	}
	return cfg, diags
}

// userAgent names the provider's version (stamped by the build) and
// Terraform's in every API request, for the API server's audit log.
func userAgent(version, terraformVersion string) string {
	ua := kube.FieldManager + "/" + version
	if terraformVersion != "" {
		ua += " Terraform/" + terraformVersion
	}
	return ua
}

func stringOr(v types.String, env string) string {
	if !v.IsNull() && !v.IsUnknown() {
		return v.ValueString()
	}
	return os.Getenv(env)
}

func boolOr(v types.Bool, env string) bool {
	if !v.IsNull() && !v.IsUnknown() {
		return v.ValueBool()
	}
	b, _ := strconv.ParseBool(os.Getenv(env))
	return b
}

// proxyURL accepts the proxies client-go can use.
type proxyURL struct{}

func (proxyURL) Description(context.Context) string {
	return "an http, https or socks5 URL"
}
func (v proxyURL) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (proxyURL) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	u, err := url.Parse(req.ConfigValue.ValueString())
	if err == nil && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "socks5") && u.Host != "" {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Invalid proxy_url",
		fmt.Sprintf("%q is not an http, https or socks5 URL with a host, e.g. \"http://proxy.internal:3128\".", req.ConfigValue.ValueString()))
}
