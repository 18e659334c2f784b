package training

import (
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// aiplatform_training_runtime: a Kubeflow Trainer (v2) ClusterTrainingRuntime,
// or a namespaced TrainingRuntime when namespace is set — the template every
// TrainJob that names it runs on. This file holds the schema and the model;
// training_runtime_object.go maps the model to and from the object,
// training_runtime_plan.go checks it at plan time.

var (
	// ClusterTrainingRuntimeKind is Trainer's cluster-scoped runtime.
	ClusterTrainingRuntimeKind = catalog.ClusterTrainingRuntimeKind
	// TrainingRuntimeKind is Trainer's namespaced runtime.
	TrainingRuntimeKind = catalog.TrainingRuntimeKind
	// TrainJobKind is what data scientists submit; it names a runtime.
	TrainJobKind = catalog.TrainJobKind
)

// Frameworks and what Trainer v2.3.0 calls them.
const (
	FrameworkTorch     = "torch"
	FrameworkDeepSpeed = "deepspeed"
	FrameworkMPI       = "mpi"
	FrameworkJAX       = "jax"

	// Names fixed by Trainer: the trainer step's replicated job and its
	// container ("node"), the MPI launcher job, the labels.
	runtimeNode          = "node"
	runtimeLauncher      = "launcher"
	frameworkLabel       = "trainer.kubeflow.org/framework"
	ancestorLabel        = "trainer.kubeflow.org/trainjob-ancestor-step"
	ancestorTrainer      = "trainer"
	runtimeQueueLabel    = catalog.KueueQueueLabel
	checkpointVolume     = "checkpoint"
	defaultCheckpointDir = "/checkpoints"
	defaultCheckpointEnv = "CHECKPOINT_DIR"

	SchedulerVolcano      = "volcano"
	SchedulerCoscheduling = "coscheduling"
	// coschedulingDefaultTimeout is the CRD's default scheduleTimeoutSeconds.
	coschedulingDefaultTimeout = 60
)

var (
	runtimeEnvName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
	// credentialName matches environment variable names that look like
	// credentials: those go in secret_env, by Secret reference.
	credentialName = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL)`)
)

type runtimeModel struct {
	ID        types.String `tfsdk:"id"`
	Name      types.String `tfsdk:"name"`
	Namespace types.String `tfsdk:"namespace"`
	object.LiveChanges
	Framework         types.String          `tfsdk:"framework"`
	NumNodes          types.Int64           `tfsdk:"num_nodes"`
	Image             types.String          `tfsdk:"image"`
	Command           []types.String        `tfsdk:"command"`
	Args              []types.String        `tfsdk:"args"`
	ProcsPerNode      types.Int64           `tfsdk:"procs_per_node"`
	Resources         *runtimeResources     `tfsdk:"resources_per_node"`
	NodeSelector      types.Map             `tfsdk:"node_selector"`
	Tolerations       []object.Toleration   `tfsdk:"tolerations"`
	Gang              *runtimeGang          `tfsdk:"gang"`
	Checkpoint        *runtimeCheckpoint    `tfsdk:"checkpoint"`
	FailurePolicy     *runtimeFailurePolicy `tfsdk:"failure_policy"`
	Env               types.Map             `tfsdk:"env"`
	SecretEnv         []runtimeSecretEnv    `tfsdk:"secret_env"`
	PriorityClassName types.String          `tfsdk:"priority_class_name"`
	Template          *podtemplate.Template `tfsdk:"template"`

	Kind      types.String `tfsdk:"kind"`
	GPUsTotal types.Int64  `tfsdk:"gpus_total"`
}

type runtimeResources struct {
	GPUs        types.Int64  `tfsdk:"gpus"`
	GPUResource types.String `tfsdk:"gpu_resource"`
	CPU         types.String `tfsdk:"cpu"`
	Memory      types.String `tfsdk:"memory"`
}

type runtimeGang struct {
	KueueQueue      types.String `tfsdk:"kueue_queue"`
	Scheduler       types.String `tfsdk:"scheduler"`
	ScheduleTimeout types.String `tfsdk:"schedule_timeout"`
}

type runtimeCheckpoint struct {
	ClaimName types.String `tfsdk:"claim_name"`
	MountPath types.String `tfsdk:"mount_path"`
	Env       types.String `tfsdk:"env"`
}

type runtimeFailurePolicy struct {
	MaxRestarts types.Int64 `tfsdk:"max_restarts"`
}

type runtimeSecretEnv struct {
	Name   types.String `tfsdk:"name"`
	Secret types.String `tfsdk:"secret"`
	Key    types.String `tfsdk:"key"`
}

// ObjectRef names the runtime: by namespace/name when namespaced.
func (m *runtimeModel) ObjectRef() kube.Ref {
	return kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
}

// SetObjectRef sets name, namespace (null for a cluster runtime) and id.
func (m *runtimeModel) SetObjectRef(r kube.Ref) {
	m.Name = types.StringValue(r.Name)
	m.Namespace = types.StringNull()
	if r.Namespace != "" {
		m.Namespace = types.StringValue(r.Namespace)
	}
	m.ID = types.StringValue(r.String())
}

// namespaced: a TrainingRuntime (namespace set, or known only at apply).
func (m *runtimeModel) namespaced() bool { return !m.Namespace.IsNull() }

func (m *runtimeModel) framework() string { return m.Framework.ValueString() }

// mpi: the frameworks that run on Trainer's MPI policy (a launcher and
// nodes reached over ssh).
func (m *runtimeModel) mpi() bool {
	return m.framework() == FrameworkMPI || m.framework() == FrameworkDeepSpeed
}

func (m *runtimeModel) gpus() int64 {
	if m.Resources == nil || !object.Known(m.Resources.GPUs) {
		return 0
	}
	return m.Resources.GPUs.ValueInt64()
}

func (m *runtimeModel) gpuResource() string {
	if m.Resources != nil && object.Known(m.Resources.GPUResource) && m.Resources.GPUResource.ValueString() != "" {
		return m.Resources.GPUResource.ValueString()
	}
	return capacity.DefaultGPUResource
}

func (m *runtimeModel) checkpointPath() string {
	if c := m.Checkpoint; c != nil && object.Known(c.MountPath) {
		return c.MountPath.ValueString()
	}
	return defaultCheckpointDir
}

func (m *runtimeModel) checkpointEnv() string {
	if c := m.Checkpoint; c != nil && object.Known(c.Env) {
		return c.Env.ValueString()
	}
	return defaultCheckpointEnv
}

// NewTrainingRuntime is aiplatform_training_runtime.
func NewTrainingRuntime() resource.Resource {
	spec := object.Spec[runtimeModel]{
		TypeName: "training_runtime",
		Kind:     ClusterTrainingRuntimeKind,
		Description: "A Kubeflow Trainer v2 runtime (`trainer.kubeflow.org/v1alpha1`): a `ClusterTrainingRuntime`, or a namespaced " +
			"`TrainingRuntime` when `namespace` is set — the template every TrainJob that names it (`spec.runtimeRef.name`) runs on. " +
			"Typed: the framework becomes Trainer's ML policy (`torch`, `jax`, or `mpi` for `mpi` and `deepspeed`, with a launcher), " +
			"`num_nodes` its node count, and the image, command, resources, environment and checkpoint mount fill the trainer " +
			"container `node` of the JobSet's replicated job `node`. Everything else a pod can say goes in `template` (the shared " +
			"pod-template attributes, with `pod_template` for the long tail).\n\n" +
			"The plan refuses, with the attribute's path, a runtime that could never run: more GPUs per node than any node matching " +
			"`node_selector` has, `num_nodes × gpus` beyond those nodes' total or beyond the gang queue's ClusterQueue quota " +
			"(nominal plus borrowing limit: Kueue admits a gang whole or not at all), a Kueue queue while the live Kueue " +
			"configuration lacks the `trainer.kubeflow.org/trainjob` integration (or `batch/job`: Kueue's chart registers its Job webhook " +
			"anyway, and with that integration off the webhook refuses every Job, a TrainJob's too), a Volcano gang while Volcano's CRDs are not served, " +
			"and framework/field combinations Trainer v2.3.0 rejects or ignores. It warns when the queue may fall back " +
			"(`TryNextFlavor`) to a flavor whose nodes have fewer GPUs than one pod asks for.\n\n" +
			"Data scientists then submit `TrainJob`s with `spec.runtimeRef.name` set to this runtime (and the label " +
			"`kueue.x-k8s.io/queue-name` for Kueue admission).",
		Attributes: runtimeAttributes(),
		Fields:     runtimeFields,
		Read:       readRuntime,
		Validate:   validateRuntime,
		ModifyPlan: planRuntime,
	}
	namespaced := spec
	namespaced.Kind = TrainingRuntimeKind
	return object.NewScoped[runtimeModel](spec, namespaced)
}

// templateAttribute is the shared pod template, with containers optional:
// the trainer container "node" comes from the typed attributes.
func templateAttribute() schema.SingleNestedAttribute {
	attrs := podtemplate.Attributes()
	c := attrs["containers"].(schema.ListNestedAttribute)
	c.Required, c.Optional, c.Validators = false, true, nil
	c.MarkdownDescription = "Containers beside the trainer container `node` (sidecars). `node` itself is the typed attributes' " +
		"(`image`, `command`, `resources_per_node`, `env`, …); its other fields go in `pod_template` (containers merge by name)."
	attrs["containers"] = c
	return schema.SingleNestedAttribute{Optional: true, Attributes: attrs,
		MarkdownDescription: "The rest of the pods' template (shared pod-template attributes): volumes, sidecars, init containers, " +
			"security context, labels, and `pod_template` for anything else. `node_selector`, `tolerations` and `priority_class_name` " +
			"are set at the top level instead."}
}

func runtimeAttributes() map[string]schema.Attribute {
	str := func(desc string, v ...validator.String) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc, Validators: v}
	}
	return map[string]schema.Attribute{
		"namespace": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Namespace of a namespaced `TrainingRuntime`; unset: a `ClusterTrainingRuntime` every namespace's TrainJobs " +
				"may name. Changing it replaces the runtime.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			Validators:    []validator.String{validators.DNSLabel()}},
		"framework": schema.StringAttribute{Required: true,
			MarkdownDescription: "`torch` (Trainer's torch policy: torchrun with `PET_*` rank and master variables), `jax`, `mpi` or " +
				"`deepspeed` (both Trainer's MPI policy with OpenMPI: a launcher runs `command`, the nodes run sshd). Also the " +
				"`trainer.kubeflow.org/framework` label.",
			Validators: []validator.String{stringvalidator.OneOf(FrameworkTorch, FrameworkDeepSpeed, FrameworkMPI, FrameworkJAX)}},
		"num_nodes": schema.Int64Attribute{Required: true,
			MarkdownDescription: "Nodes (pods) of a TrainJob (`mlPolicy.numNodes`); a TrainJob may override it. For `mpi`/`deepspeed` the " +
				"launcher counts as one of them (`runLauncherAsNode`): Trainer v2.3.0 gives the launcher (the trainer step) " +
				"`mlPolicy.numNodes` pods, so the runtime says `numNodes: 1` and the `node` job runs the other `num_nodes − 1` " +
				"(at least 2 in all).",
			Validators: []validator.Int64{int64validator.Between(1, 10000)}},
		"image": schema.StringAttribute{Required: true, MarkdownDescription: "Image of the trainer container `node`.",
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
		"command": schema.ListAttribute{ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Command of the trainer container (for `mpi`/`deepspeed`: of the launcher, e.g. `mpirun …`); the image's when unset."},
		"args": schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Arguments of the trainer container."},
		"procs_per_node": schema.Int64Attribute{Optional: true,
			MarkdownDescription: "Processes per node. `mpi`/`deepspeed`: the MPI policy's `numProcPerNode` (slots per host); default the GPUs per " +
				"node, or 1. `torch`: Trainer v2.3.0's torch policy has no such field — torchrun starts one process per GPU — so only " +
				"the GPUs per node is accepted (a TrainJob sets `spec.trainer.numProcPerNode` to differ). `jax`: one process per node, only 1.",
			Validators: []validator.Int64{int64validator.Between(1, 1024)}},
		"resources_per_node": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Resources of the trainer container of each node: GPUs as request and limit, CPU and memory as requests.",
			Attributes: map[string]schema.Attribute{
				"gpus": schema.Int64Attribute{Optional: true, MarkdownDescription: "GPUs per node (`gpu_resource`, request = limit). Checked at plan " +
					"against the live nodes matching `node_selector`.", Validators: []validator.Int64{int64validator.Between(0, 1024)}},
				"gpu_resource": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(capacity.DefaultGPUResource),
					MarkdownDescription: "Extended resource name of the GPUs. Default `nvidia.com/gpu`.",
					Validators:          []validator.String{validators.QualifiedName()}},
				"cpu":    str("CPU request per node, e.g. `\"32\"`.", validators.Quantity()),
				"memory": str("Memory request per node, e.g. `\"512Gi\"`.", validators.Quantity()),
			}},
		"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Labels of the nodes the training pods run on, typically an `aiplatform_gpu_node_pool`'s `selector`.",
			Validators:          []validator.Map{validators.Labels()}},
		"tolerations": object.TolerationsAttribute("Taints the training pods tolerate (GPU pools are commonly tainted)."),
		"gang": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Gang admission: all nodes of a TrainJob start together or none does. Exactly one of `kueue_queue` or `scheduler`.",
			Attributes: map[string]schema.Attribute{
				"kueue_queue": str("Kueue LocalQueue the runtime's TrainJobs use (label `kueue.x-k8s.io/queue-name` on the runtime; TrainJobs carry "+
					"the same label). The plan checks the queue's ClusterQueue quota can hold the whole gang and that the live Kueue configuration "+
					"has the `trainer.kubeflow.org/trainjob` integration.", validators.LabelValue(), stringvalidator.LengthAtLeast(1)),
				"scheduler": str("`volcano` or `coscheduling`: Trainer's `podGroupPolicy` (a PodGroup per TrainJob).",
					stringvalidator.OneOf(SchedulerVolcano, SchedulerCoscheduling)),
				"schedule_timeout": str("With `coscheduling`: how long a PodGroup may wait for all its pods (`scheduleTimeoutSeconds`), "+
					"e.g. `\"5m\"`; the CRD's default is 60 s.", validators.Duration(time.Second, 24*time.Hour)),
			}},
		"checkpoint": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Mount of an `aiplatform_checkpoint_store`'s claim into the trainer container, its path passed as an environment variable.",
			Attributes: map[string]schema.Attribute{
				"claim_name": schema.StringAttribute{Required: true, MarkdownDescription: "The store's PersistentVolumeClaim (`claim_name`).",
					Validators: []validator.String{validators.DNSSubdomain()}},
				"mount_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(defaultCheckpointDir),
					MarkdownDescription: "Where the checkpoints appear; default `/checkpoints` (pass the store's `mount_path`).",
					Validators:          []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^/`), "must be an absolute path")}},
				"env": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(defaultCheckpointEnv),
					MarkdownDescription: "Environment variable set to `mount_path` in the trainer container; default `CHECKPOINT_DIR`.",
					Validators:          []validator.String{stringvalidator.RegexMatches(runtimeEnvName, "must be an environment variable name")}},
			}},
		"failure_policy": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Bounded restarts: the JobSet is recreated at most `max_restarts` times (`failurePolicy.maxRestarts`); pods run " +
				"with `restartPolicy: Never` and each Job with `backoffLimit: 0`, so one failed pod restarts the whole gang from its checkpoint.",
			Attributes: map[string]schema.Attribute{
				"max_restarts": schema.Int64Attribute{Required: true, MarkdownDescription: "Restarts of the whole JobSet before the TrainJob fails.",
					Validators: []validator.Int64{int64validator.Between(0, 1000)}},
			}},
		"env": schema.MapAttribute{ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Plain environment variables of the trainer container, name → value. Names that look like credentials " +
				"(`*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*KEY*`) are refused: use `secret_env`. Trainer's injected names (`PET_*`, `OMPI_MCA_*`) too."},
		"secret_env": schema.ListNestedAttribute{Optional: true,
			MarkdownDescription: "Credentials, only by Secret reference: each sets `name` from `key` of Secret `secret` in the TrainJob's namespace.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Variable name.",
					Validators: []validator.String{stringvalidator.RegexMatches(runtimeEnvName, "must be an environment variable name")}},
				"secret": schema.StringAttribute{Required: true, MarkdownDescription: "Secret name.", Validators: []validator.String{validators.DNSSubdomain()}},
				"key":    schema.StringAttribute{Required: true, MarkdownDescription: "Key in the Secret.", Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			}},
			Validators: []validator.List{listvalidator.SizeAtLeast(1)}},
		"priority_class_name": str("PriorityClass of the training pods (e.g. a low one that short jobs may preempt).", validators.DNSSubdomain()),
		"template":            templateAttribute(),
		"kind": schema.StringAttribute{Computed: true, MarkdownDescription: "`ClusterTrainingRuntime` or `TrainingRuntime`.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"gpus_total": schema.Int64Attribute{Computed: true, MarkdownDescription: "GPUs of one TrainJob at `num_nodes`: `num_nodes × gpus`."},
	}
}
