package serving

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// aiplatform_inference_pool: a Gateway API Inference Extension InferencePool
// over a serving group's pods, and the endpoint picker it names (a
// Deployment, its Service, ServiceAccount, Role and RoleBinding, all owned
// by the pool). Split by verb: this file is the schema and model, _plan the
// checks, _object the objects both ways, _apply the picker's objects, the
// wait and the resource's Read and Delete around the generic path.

var inferencePoolKind = catalog.InferencePoolKind

var (
	serviceAccountKind = kube.Kind{Version: "v1", Resource: "serviceaccounts", Kind: "ServiceAccount", Namespaced: true}
	roleKind           = kube.Kind{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles", Kind: "Role", Namespaced: true}
	roleBindingKind    = kube.Kind{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings", Kind: "RoleBinding", Namespaced: true}
)

const (
	// DefaultPickerImage is the endpoint picker of the Gateway API Inference
	// Extension v1.6.0: the lightweight picker (cmd/lwepp), the one that
	// release's module ships.
	DefaultPickerImage = "registry.k8s.io/gateway-api-inference-extension/lwepp:v1.6.0"
	// pickerContainer is the picker's container in its pod.
	pickerContainer = "epp"
	// pickerLabel selects the picker's pods.
	pickerLabel = "aiplatform.io/inference-pool-epp"
	// The picker's gRPC health port (Ready once the pool is synced, service
	// pickerHealthService) and metrics port: fixed, the probes name them.
	pickerHealthPort, pickerMetricsPort = 9003, 9090
	pickerHealthService                 = "inference-extension"
	pickerDefaultPort                   = 9002
	pickerDefaultTimeout                = 10 * time.Minute
)

type inferencePoolModel struct {
	object.NamespacedMeta
	object.LiveChanges
	Selector     types.Map             `tfsdk:"selector"`
	TargetPorts  []types.Int64         `tfsdk:"target_ports"`
	AppProtocol  types.String          `tfsdk:"app_protocol"`
	FailureMode  types.String          `tfsdk:"failure_mode"`
	ServingGroup *poolServingGroup     `tfsdk:"serving_group"`
	Image        types.String          `tfsdk:"picker_image"`
	Replicas     types.Int64           `tfsdk:"picker_replicas"`
	Port         types.Int64           `tfsdk:"picker_port"`
	Secure       types.Bool            `tfsdk:"picker_secure_serving"`
	LogLevel     types.Int64           `tfsdk:"picker_log_level"`
	Args         []types.String        `tfsdk:"picker_args"`
	Template     *podtemplate.Template `tfsdk:"picker_template"`
	PickerName   types.String          `tfsdk:"picker_name"`
	Endpoint     types.String          `tfsdk:"picker_endpoint"`
}

// poolServingGroup is the serving group the pool fronts, for the plan's
// selector check.
type poolServingGroup struct {
	Kind   types.String `tfsdk:"kind"`
	Name   types.String `tfsdk:"name"`
	Labels types.Map    `tfsdk:"labels"`
}

// NewInferencePool is aiplatform_inference_pool.
func NewInferencePool() resource.Resource {
	return &inferencePoolResource{Resource: object.New[inferencePoolModel](object.Spec[inferencePoolModel]{
		TypeName:     "inference_pool",
		Kind:         inferencePoolKind,
		ApplyTimeout: pickerDefaultTimeout,
		Description: "A Gateway API Inference Extension `InferencePool` (`inference.networking.k8s.io/v1`) over the pods of a serving group, " +
			"and the endpoint picker it routes through: a Deployment (`<name>-epp`) running the picker, its Service (the pool's " +
			"`endpointPickerRef`), and a ServiceAccount with a Role that reads the pods and the pool — all owned by the pool, so the " +
			"garbage collector removes them with it, and deleted with it.\n\n" +
			"The default picker is v1.6.0's lightweight picker (`lwepp`): it picks round-robin among the Ready pods that match " +
			"`selector` and serve a `target_ports` port; it takes flags only (no configuration file, no scorers, no prefill/decode " +
			"split — those belong to llm-d's inference scheduler, a different image with a different configuration). `picker_args` " +
			"are checked at plan time against the flags that picker accepts.\n\n" +
			"The plan refuses a `selector` that does not match the labels of the pods of `serving_group` (the live Deployment's or " +
			"LeaderWorkerSet's pod template, or the labels given), showing both label sets, and warns when no live pod matches it. " +
			"Create and update wait until the picker's Deployment is available (its pods Ready: the picker reports serving once it " +
			"has read the pool) within `timeouts`.",
		Attributes: inferencePoolAttributes(),
		Fields:     inferencePoolFields,
		Read:       readInferencePool,
		Validate:   validateInferencePool,
		ModifyPlan: planInferencePool,
		AfterApply: afterInferencePool,
	})}
}

func inferencePoolAttributes() map[string]schema.Attribute {
	port := []validator.Int64{int64validator.Between(1, 65535)}
	return map[string]schema.Attribute{
		"selector": schema.MapAttribute{Required: true, ElementType: types.StringType,
			MarkdownDescription: "Labels the model server pods carry (the pool's `selector.matchLabels`, 1 to 64).",
			Validators:          []validator.Map{validators.Labels(), mapvalidator.SizeBetween(1, 64)}},
		"target_ports": schema.ListAttribute{Required: true, ElementType: types.Int64Type,
			MarkdownDescription: "Ports the model servers listen on (1 to 8, unique): each Ready pod is one endpoint per port.",
			Validators: []validator.List{listvalidator.SizeBetween(1, 8), listvalidator.UniqueValues(),
				listvalidator.ValueInt64sAre(port...)}},
		"app_protocol": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("http"),
			MarkdownDescription: "Protocol between the gateway and the model servers: `http` (default) or `kubernetes.io/h2c`.",
			Validators:          []validator.String{stringvalidator.OneOf("http", "kubernetes.io/h2c")}},
		"failure_mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("FailClose"),
			MarkdownDescription: "What the gateway does when the picker does not answer: `FailClose` (default: the request fails) or " +
				"`FailOpen` (the gateway picks an endpoint itself).",
			Validators: []validator.String{stringvalidator.OneOf("FailOpen", "FailClose")}},
		"serving_group": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "The serving group the pool fronts, for the plan's check that `selector` matches its pods: " +
				"`{ kind = \"Deployment\", name = aiplatform_model_deployment.m.name }` or `{ kind = \"LeaderWorkerSet\", name = aiplatform_lws_group.g.name }` " +
				"(in the pool's namespace). The live object's pod template labels are compared (a LeaderWorkerSet's pods also carry " +
				"`leaderworkerset.sigs.k8s.io/name`); while it does not exist yet, `labels` are, when given.",
			Attributes: map[string]schema.Attribute{
				"kind": schema.StringAttribute{Required: true, MarkdownDescription: "`Deployment` or `LeaderWorkerSet`.",
					Validators: []validator.String{stringvalidator.OneOf("Deployment", "LeaderWorkerSet")}},
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Its name.", Validators: []validator.String{validators.DNSSubdomain()}},
				"labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
					MarkdownDescription: "Labels its pods carry, used while the object does not exist yet (e.g. `aiplatform_model_deployment.m.template.labels`).",
					Validators:          []validator.Map{validators.Labels()}},
			}},
		"picker_image": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultPickerImage),
			MarkdownDescription: "The endpoint picker's image. Default `" + DefaultPickerImage + "`.",
			Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
		"picker_replicas": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
			MarkdownDescription: "Picker pods. Default `1`. Each picks on its own (round-robin per replica).",
			Validators:          []validator.Int64{int64validator.Between(1, 100)}},
		"picker_port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(pickerDefaultPort),
			MarkdownDescription: "Port of the picker's ext-proc gRPC server, its Service and the pool's `endpointPickerRef`. Default `9002`. " +
				"Not 9003 or 9090 (the picker's health and metrics ports).",
			Validators: port},
		"picker_secure_serving": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "Serve ext-proc over TLS with the picker's self-signed certificate (`--secure-serving`). Default `true`."},
		"picker_log_level": schema.Int64Attribute{Optional: true,
			MarkdownDescription: "The picker's log verbosity (`--zap-log-level`). At 2 it logs each reconcile of the pool and the pods it adds " +
				"on pod events; the pods it adds when it reads the pool (at start, or when the selector or ports change) only at 4, " +
				"as its pool reconciler's logger is already at 2 and the datastore adds 2 more.",
			Validators: []validator.Int64{int64validator.Between(1, 10)}},
		"picker_args": schema.ListAttribute{Optional: true, ElementType: types.StringType,
			MarkdownDescription: "More flags of the picker, `--flag=value`. Checked at plan time against the flags v1.6.0's picker accepts; " +
				"the flags this resource sets (`--pool-*`, `--grpc-port`, `--grpc-health-port`, `--metrics-port`, `--secure-serving`, " +
				"`--zap-log-level`, `--kubeconfig`) are refused here."},
		"picker_template": podtemplate.ManagedAttribute("The picker's pod beyond what the resource sets: resources, node selector, tolerations, sidecars … " +
			"The `epp` container is the picker; its image, args, ports and probes come from this resource and must not be given here."),
		"picker_name": schema.StringAttribute{Computed: true,
			MarkdownDescription: "Name of the picker's Deployment, Service, ServiceAccount, Role and RoleBinding: `<name>-epp`."},
		"picker_endpoint": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The picker's ext-proc address: `<name>-epp.<namespace>.svc:<picker_port>`."},
	}
}
