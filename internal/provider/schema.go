package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type providerModel struct {
	ConfigPath            types.String `tfsdk:"config_path"`
	ConfigPaths           types.List   `tfsdk:"config_paths"`
	ConfigContext         types.String `tfsdk:"config_context"`
	ConfigContextAuthInfo types.String `tfsdk:"config_context_auth_info"`
	ConfigContextCluster  types.String `tfsdk:"config_context_cluster"`
	Host                  types.String `tfsdk:"host"`
	Username              types.String `tfsdk:"username"`
	Password              types.String `tfsdk:"password"`
	Token                 types.String `tfsdk:"token"`
	ClusterCACertificate  types.String `tfsdk:"cluster_ca_certificate"`
	ClientCertificate     types.String `tfsdk:"client_certificate"`
	ClientKey             types.String `tfsdk:"client_key"`
	Insecure              types.Bool   `tfsdk:"insecure"`
	TLSServerName         types.String `tfsdk:"tls_server_name"`
	ProxyURL              types.String `tfsdk:"proxy_url"`
	ForceConflicts        types.Bool   `tfsdk:"force_conflicts"`
	RequestTimeout        types.String `tfsdk:"request_timeout"`
	Exec                  types.Object `tfsdk:"exec"`
}

type execModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Command    types.String `tfsdk:"command"`
	Args       types.List   `tfsdk:"args"`
	Env        types.Map    `tfsdk:"env"`
}

var execAttrTypes = map[string]attr.Type{
	"api_version": types.StringType,
	"command":     types.StringType,
	"args":        types.ListType{ElemType: types.StringType},
	"env":         types.MapType{ElemType: types.StringType},
}

// settingAttributes are the provider attributes that are not about where and
// how to connect: an unknown value of one of them does not make the
// connection unknown.
var settingAttributes = map[string]bool{"force_conflicts": true, "request_timeout": true}

func str(desc string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, MarkdownDescription: desc}
}

func (p *aiplatform) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	secret := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Sensitive: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Turns a GPU Kubernetes cluster into a shared AI platform: Kueue queues and quota, priorities, " +
			"batch-scheduler installs, Ray clusters, serving groups and model caches. Every resource computes its diff " +
			"against the live cluster.\n\nThe connection attributes and their environment variables are those of the " +
			"`hashicorp/kubernetes` provider v2, with the same meaning, so an existing provider block can be copied. " +
			"A kubeconfig is read only when named (`config_path`, `config_paths`, `KUBE_CONFIG_PATH`, " +
			"`KUBE_CONFIG_PATHS`): `$KUBECONFIG` and `~/.kube/config` are never read implicitly. With nothing set, " +
			"the provider uses in-cluster configuration when Terraform runs in a pod; otherwise it has no cluster, " +
			"which is fine for what needs none (`data.aiplatform_inference_sizing`), and everything that needs one " +
			"fails with a message that says how to configure it. The provider contacts the cluster only when a " +
			"resource or data source needs it.",
		Attributes: map[string]schema.Attribute{
			"config_path": schema.StringAttribute{Optional: true, MarkdownDescription: "Path to a kubeconfig file. Env: `KUBE_CONFIG_PATH`.",
				Validators: []validator.String{stringvalidator.ConflictsWith(path.MatchRoot("config_paths"))}},
			"config_paths": schema.ListAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Kubeconfig files merged in order, as `$KUBECONFIG` lists them for kubectl. " +
					"Env: `KUBE_CONFIG_PATHS` (separated by `:`, `;` on Windows).",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))}},
			"config_context":           str("Context of the kubeconfig to use (default: its `current-context`). Env: `KUBE_CTX`."),
			"config_context_auth_info": str("User of the kubeconfig to use instead of the context's. Env: `KUBE_CTX_AUTH_INFO`."),
			"config_context_cluster":   str("Cluster of the kubeconfig to use instead of the context's. Env: `KUBE_CTX_CLUSTER`."),
			"host":                     str("API server URL, e.g. `https://10.0.0.1:6443`; overrides the kubeconfig's. Env: `KUBE_HOST`."),
			"username":                 str("Username for HTTP basic authentication. Env: `KUBE_USER`."),
			"password":                 secret("Password for HTTP basic authentication. Env: `KUBE_PASSWORD`."),
			"token":                    secret("Bearer token. Env: `KUBE_TOKEN`."),
			"cluster_ca_certificate":   str("PEM CA bundle of the API server. Env: `KUBE_CLUSTER_CA_CERT_DATA`."),
			"client_certificate":       str("PEM client certificate. Env: `KUBE_CLIENT_CERT_DATA`."),
			"client_key":               secret("PEM client key. Env: `KUBE_CLIENT_KEY_DATA`."),
			"insecure":                 schema.BoolAttribute{Optional: true, MarkdownDescription: "Skip TLS verification of the API server. Off unless set. Env: `KUBE_INSECURE`."},
			"tls_server_name":          str("Server name checked against the API server's certificate instead of the host's. Env: `KUBE_TLS_SERVER_NAME`."),
			"proxy_url": schema.StringAttribute{Optional: true, MarkdownDescription: "Proxy for every request to the API server " +
				"(`http`, `https` or `socks5` URL). Env: `KUBE_PROXY_URL`.",
				Validators: []validator.String{proxyURL{}}},
			"request_timeout": schema.StringAttribute{Optional: true, MarkdownDescription: "Longest wait for one API request, " +
				"as a Go duration (`\"30s\"`, `\"2m\"`). Default `\"30s\"`. A slow or hung API server fails the operation after this, naming the host.",
				Validators: []validator.String{validators.Duration(0, 0)}},
			"force_conflicts": schema.BoolAttribute{Optional: true, MarkdownDescription: "Take ownership of fields another field manager " +
				"(kubectl, a controller) set, instead of failing with the manager's name. Default false."},
		},
		Blocks: map[string]schema.Block{
			"exec": schema.SingleNestedBlock{
				MarkdownDescription: "Exec credential plugin, e.g. `aws eks get-token` or `gke-gcloud-auth-plugin`: " +
					"`api_version` and `command` are required.",
				Attributes: map[string]schema.Attribute{
					"api_version": str("e.g. `client.authentication.k8s.io/v1beta1`."),
					"command":     str("The plugin to run, e.g. `aws`."),
					"args":        schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Its arguments."},
					"env":         schema.MapAttribute{ElementType: types.StringType, Optional: true, Sensitive: true, MarkdownDescription: "Environment variables set for it."},
				},
			},
		},
	}
}

// ValidateConfig refuses an exec block that cannot run, at plan, with the
// attribute's path (hashicorp/kubernetes requires both attributes too).
func (p *aiplatform) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var exec types.Object
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("exec"), &exec)...)
	if resp.Diagnostics.HasError() || exec.IsNull() || exec.IsUnknown() {
		return
	}
	var e execModel
	resp.Diagnostics.Append(exec.As(ctx, &e, objectAsOptions)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if e.Command.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("exec").AtName("command"), "Missing exec command",
			"An exec block needs command: the credential plugin to run, e.g. \"aws\" or \"gke-gcloud-auth-plugin\".")
	}
	if e.APIVersion.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("exec").AtName("api_version"), "Missing exec api_version",
			"An exec block needs api_version, the version of the credential plugin's output, e.g. \"client.authentication.k8s.io/v1beta1\".")
	}
}

var _ provider.ProviderWithValidateConfig = (*aiplatform)(nil)
