// Package provider is the aiplatform provider: its configuration (how to reach
// the cluster, the same attributes as the hashicorp/kubernetes provider) and
// the registry of resources and data sources.
package provider

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/gpu"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/installs"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/kueue"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/serving"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/training"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/volcano"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// New returns the provider factory for providerserver. It starts the
// provider's profiling when AIPLATFORM_PROFILE asks for it.
func New(version string) func() provider.Provider {
	telemetry.StartProfiling()
	return func() provider.Provider { return &aiplatform{version: version} }
}

type aiplatform struct{ version string }

type providerModel struct {
	ConfigPath           types.String `tfsdk:"config_path"`
	ConfigContext        types.String `tfsdk:"config_context"`
	Host                 types.String `tfsdk:"host"`
	Token                types.String `tfsdk:"token"`
	ClusterCACertificate types.String `tfsdk:"cluster_ca_certificate"`
	ClientCertificate    types.String `tfsdk:"client_certificate"`
	ClientKey            types.String `tfsdk:"client_key"`
	Insecure             types.Bool   `tfsdk:"insecure"`
	ForceConflicts       types.Bool   `tfsdk:"force_conflicts"`
	RequestTimeout       types.String `tfsdk:"request_timeout"`
	Exec                 *execModel   `tfsdk:"exec"`
}

type execModel struct {
	APIVersion types.String   `tfsdk:"api_version"`
	Command    types.String   `tfsdk:"command"`
	Args       []types.String `tfsdk:"args"`
	Env        types.Map      `tfsdk:"env"`
}

func (p *aiplatform) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "aiplatform"
	resp.Version = p.version
}

func (p *aiplatform) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Turns a GPU Kubernetes cluster into a shared AI platform: Kueue queues and quota, priorities, " +
			"batch-scheduler installs, Ray clusters, serving groups and model caches. Every resource computes its diff " +
			"against the live cluster.\n\nThe connection attributes follow the `hashicorp/kubernetes` provider, so an " +
			"existing provider block can be copied. With no attribute set the provider uses in-cluster configuration, " +
			"then `$KUBECONFIG` / `~/.kube/config`.",
		Attributes: map[string]schema.Attribute{
			"config_path":            schema.StringAttribute{Optional: true, MarkdownDescription: "Path to a kubeconfig file. Env: `KUBE_CONFIG_PATH`."},
			"config_context":         schema.StringAttribute{Optional: true, MarkdownDescription: "Context of the kubeconfig to use. Env: `KUBE_CTX`."},
			"host":                   schema.StringAttribute{Optional: true, MarkdownDescription: "API server URL, e.g. `https://10.0.0.1:6443`. Env: `KUBE_HOST`."},
			"token":                  schema.StringAttribute{Optional: true, Sensitive: true, MarkdownDescription: "Bearer token. Env: `KUBE_TOKEN`."},
			"cluster_ca_certificate": schema.StringAttribute{Optional: true, MarkdownDescription: "PEM CA bundle of the API server. Env: `KUBE_CLUSTER_CA_CERT_DATA`."},
			"client_certificate":     schema.StringAttribute{Optional: true, MarkdownDescription: "PEM client certificate. Env: `KUBE_CLIENT_CERT_DATA`."},
			"client_key":             schema.StringAttribute{Optional: true, Sensitive: true, MarkdownDescription: "PEM client key. Env: `KUBE_CLIENT_KEY_DATA`."},
			"insecure":               schema.BoolAttribute{Optional: true, MarkdownDescription: "Skip TLS verification of the API server. Off unless set. Env: `KUBE_INSECURE`."},
			"request_timeout": schema.StringAttribute{Optional: true, MarkdownDescription: "Longest wait for one API request, " +
				"as a Go duration (`\"30s\"`, `\"2m\"`). Default `\"30s\"`. A slow or hung API server fails the operation after this, naming the host.",
				Validators: []validator.String{validators.Duration(0, 0)}},
			"force_conflicts": schema.BoolAttribute{Optional: true, MarkdownDescription: "Take ownership of fields another field manager " +
				"(kubectl, a controller) set, instead of failing with the manager's name. Default false."},
		},
		Blocks: map[string]schema.Block{
			"exec": schema.SingleNestedBlock{
				MarkdownDescription: "Exec credential plugin, e.g. `aws eks get-token` or `gke-gcloud-auth-plugin`.",
				Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{Optional: true, MarkdownDescription: "e.g. `client.authentication.k8s.io/v1beta1`."},
					"command":     schema.StringAttribute{Optional: true},
					"args":        schema.ListAttribute{ElementType: types.StringType, Optional: true},
					"env":         schema.MapAttribute{ElementType: types.StringType, Optional: true, Sensitive: true},
				},
			},
		},
	}
}

func (p *aiplatform) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg := kube.Config{
		ConfigPath:           stringOr(m.ConfigPath, "KUBE_CONFIG_PATH"),
		ConfigContext:        stringOr(m.ConfigContext, "KUBE_CTX"),
		Host:                 stringOr(m.Host, "KUBE_HOST"),
		Token:                stringOr(m.Token, "KUBE_TOKEN"),
		ClusterCACertificate: stringOr(m.ClusterCACertificate, "KUBE_CLUSTER_CA_CERT_DATA"),
		ClientCertificate:    stringOr(m.ClientCertificate, "KUBE_CLIENT_CERT_DATA"),
		ClientKey:            stringOr(m.ClientKey, "KUBE_CLIENT_KEY_DATA"),
		Insecure:             boolOr(m.Insecure, "KUBE_INSECURE"),
		ForceConflicts:       m.ForceConflicts.ValueBool(),
		WrapTransport:        telemetry.RequestLogTransport(), // nil unless AIPLATFORM_REQUEST_LOG is set
	}
	if !m.RequestTimeout.IsNull() && !m.RequestTimeout.IsUnknown() {
		cfg.Timeout, _ = time.ParseDuration(m.RequestTimeout.ValueString()) // validated at plan
	}
	if m.Exec != nil && !m.Exec.Command.IsNull() {
		cfg.Exec = &kube.ExecConfig{APIVersion: m.Exec.APIVersion.ValueString(), Command: m.Exec.Command.ValueString(), Env: map[string]string{}}
		for _, a := range m.Exec.Args {
			cfg.Exec.Args = append(cfg.Exec.Args, a.ValueString())
		}
		for k, v := range m.Exec.Env.Elements() {
			if s, ok := v.(types.String); ok {
				cfg.Exec.Env[k] = s.ValueString()
			}
		}
	}
	client, err := kube.NewClient(cfg)
	if err != nil {
		resp.Diagnostics.AddError("Invalid Kubernetes connection configuration", err.Error())
		return
	}
	resp.ResourceData = client
	resp.DataSourceData = client
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

func (p *aiplatform) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		gpu.NewNodePool,
		kueue.NewResourceFlavor,
		kueue.NewWorkloadPriorityClass,
		kueue.NewClusterQueue,
		kueue.NewLocalQueue,
		kueue.NewCohort,
		kueue.NewTopology,
		kueue.NewAdmissionCheck,
		kueue.NewProvisioningRequestConfig,
		kueue.NewMultiKueueConfig,
		kueue.NewMultiKueueCluster,
		modelcache.NewModelCache,
		installs.NewKueue,
		installs.NewVolcano,
		installs.NewKubeRayOperator,
		installs.NewLWSController,
		installs.NewJobSetController,
		installs.NewTrainer,
		volcano.NewQueue,
		serving.NewRayCluster,
		serving.NewLWSGroup,
		training.NewNCCLCheck,
		training.NewCheckpointStore,
	}
}

func (p *aiplatform) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		gpu.NewCapacityDataSource,
		serving.NewInferenceSizingDataSource,
	}
}
