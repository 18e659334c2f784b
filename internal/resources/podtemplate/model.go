// Package podtemplate is the one pod-template model shared by every resource
// that runs pods (aiplatform_ray_cluster's groups, aiplatform_lws_group's
// leader and workers, the training and serving resources to come): the
// Terraform schema, the model structs, and the mapping both ways to a
// PodTemplateSpec as the object engine handles it (unstructured maps).
//
// Fields the provider checks or that production objects commonly carry are
// typed: containers (named by the user, or adopted from the live object on
// import — never a fixed name added beside an existing container), image,
// command and args, env with values and Secret/ConfigMap/field refs, ports,
// requests and limits as separate maps, volume mounts, probes, security
// contexts, volumes (emptyDir, PVC, ConfigMap, Secret, hostPath), service
// account, labels and annotations, node selector, tolerations, affinity, priority and
// runtime class, image pull secrets, init and sidecar containers. Everything
// else a PodTemplateSpec can say goes in pod_template, an overlay decoded
// strictly against PodTemplateSpec at plan time and merged under the typed
// fields.
//
// Reads keep null what the user left unset and the server defaulted
// (protocol TCP, probe periods, defaultMode 0644, …) and keep the user's
// spelling of equal quantities ("1000m" and "1"), so that neither a refresh
// nor an import invents a diff.
package podtemplate

import (
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Template is a pod template: the metadata and spec of the pods.
type Template struct {
	Labels             types.Map           `tfsdk:"labels"`
	Annotations        types.Map           `tfsdk:"annotations"`
	Containers         []Container         `tfsdk:"containers"`
	InitContainers     []Container         `tfsdk:"init_containers"`
	Volumes            []Volume            `tfsdk:"volumes"`
	ServiceAccountName types.String        `tfsdk:"service_account_name"`
	NodeSelector       types.Map           `tfsdk:"node_selector"`
	Tolerations        []object.Toleration `tfsdk:"tolerations"`
	Affinity           types.String        `tfsdk:"affinity"`
	PriorityClassName  types.String        `tfsdk:"priority_class_name"`
	RuntimeClassName   types.String        `tfsdk:"runtime_class_name"`
	ImagePullSecrets   []types.String      `tfsdk:"image_pull_secrets"`
	SecurityContext    *PodSecurityContext `tfsdk:"security_context"`
	// PodTemplate is the overlay: YAML or JSON of a PodTemplateSpec.
	PodTemplate types.String `tfsdk:"pod_template"`
}

// Container is one container of the pod (also an init container; with
// restart_policy "Always" an init container is a native sidecar).
type Container struct {
	Name            types.String              `tfsdk:"name"`
	Image           types.String              `tfsdk:"image"`
	ImagePullPolicy types.String              `tfsdk:"image_pull_policy"`
	Command         []types.String            `tfsdk:"command"`
	Args            []types.String            `tfsdk:"args"`
	WorkingDir      types.String              `tfsdk:"working_dir"`
	Env             []EnvVar                  `tfsdk:"env"`
	Ports           []Port                    `tfsdk:"ports"`
	Requests        types.Map                 `tfsdk:"requests"`
	Limits          types.Map                 `tfsdk:"limits"`
	VolumeMounts    []VolumeMount             `tfsdk:"volume_mounts"`
	StartupProbe    *Probe                    `tfsdk:"startup_probe"`
	ReadinessProbe  *Probe                    `tfsdk:"readiness_probe"`
	LivenessProbe   *Probe                    `tfsdk:"liveness_probe"`
	SecurityContext *ContainerSecurityContext `tfsdk:"security_context"`
	RestartPolicy   types.String              `tfsdk:"restart_policy"`
}

// EnvVar is one environment variable: a value or a reference.
type EnvVar struct {
	Name      types.String `tfsdk:"name"`
	Value     types.String `tfsdk:"value"`
	ValueFrom *EnvSource   `tfsdk:"value_from"`
}

// EnvSource is where a variable's value comes from; exactly one is set.
type EnvSource struct {
	SecretKeyRef     *KeyRef           `tfsdk:"secret_key_ref"`
	ConfigMapKeyRef  *KeyRef           `tfsdk:"config_map_key_ref"`
	FieldRef         *FieldRef         `tfsdk:"field_ref"`
	ResourceFieldRef *ResourceFieldRef `tfsdk:"resource_field_ref"`
}

// KeyRef is a key of a Secret or ConfigMap.
type KeyRef struct {
	Name     types.String `tfsdk:"name"`
	Key      types.String `tfsdk:"key"`
	Optional types.Bool   `tfsdk:"optional"`
}

// FieldRef is a field of the pod, e.g. metadata.name or status.podIP.
type FieldRef struct {
	FieldPath types.String `tfsdk:"field_path"`
}

// ResourceFieldRef is a container's request or limit, e.g. limits.memory.
type ResourceFieldRef struct {
	ContainerName types.String `tfsdk:"container_name"`
	Resource      types.String `tfsdk:"resource"`
	Divisor       types.String `tfsdk:"divisor"`
}

// Port is a container port.
type Port struct {
	Name          types.String `tfsdk:"name"`
	ContainerPort types.Int64  `tfsdk:"container_port"`
	Protocol      types.String `tfsdk:"protocol"`
	HostPort      types.Int64  `tfsdk:"host_port"`
}

// VolumeMount mounts a volume of the pod into a container.
type VolumeMount struct {
	Name      types.String `tfsdk:"name"`
	MountPath types.String `tfsdk:"mount_path"`
	SubPath   types.String `tfsdk:"sub_path"`
	ReadOnly  types.Bool   `tfsdk:"read_only"`
}

// Probe is a startup, readiness or liveness probe; exactly one handler is set.
type Probe struct {
	HTTPGet             *HTTPGet    `tfsdk:"http_get"`
	TCPSocket           *TCPSocket  `tfsdk:"tcp_socket"`
	Exec                *ExecAction `tfsdk:"exec"`
	GRPC                *GRPCAction `tfsdk:"grpc"`
	InitialDelaySeconds types.Int64 `tfsdk:"initial_delay_seconds"`
	PeriodSeconds       types.Int64 `tfsdk:"period_seconds"`
	TimeoutSeconds      types.Int64 `tfsdk:"timeout_seconds"`
	SuccessThreshold    types.Int64 `tfsdk:"success_threshold"`
	FailureThreshold    types.Int64 `tfsdk:"failure_threshold"`
}

// HTTPGet probes an HTTP path; port is a number or a port's name.
type HTTPGet struct {
	Path   types.String `tfsdk:"path"`
	Port   types.String `tfsdk:"port"`
	Scheme types.String `tfsdk:"scheme"`
}

// TCPSocket probes a TCP port (a number or a port's name).
type TCPSocket struct {
	Port types.String `tfsdk:"port"`
}

// ExecAction runs a command in the container.
type ExecAction struct {
	Command []types.String `tfsdk:"command"`
}

// GRPCAction calls the gRPC health service.
type GRPCAction struct {
	Port    types.Int64  `tfsdk:"port"`
	Service types.String `tfsdk:"service"`
}

// ContainerSecurityContext is the common part of a container's securityContext.
type ContainerSecurityContext struct {
	RunAsUser                types.Int64    `tfsdk:"run_as_user"`
	RunAsGroup               types.Int64    `tfsdk:"run_as_group"`
	RunAsNonRoot             types.Bool     `tfsdk:"run_as_non_root"`
	Privileged               types.Bool     `tfsdk:"privileged"`
	ReadOnlyRootFilesystem   types.Bool     `tfsdk:"read_only_root_filesystem"`
	AllowPrivilegeEscalation types.Bool     `tfsdk:"allow_privilege_escalation"`
	CapabilitiesAdd          []types.String `tfsdk:"capabilities_add"`
	CapabilitiesDrop         []types.String `tfsdk:"capabilities_drop"`
}

// PodSecurityContext is the common part of the pod's securityContext.
type PodSecurityContext struct {
	RunAsUser    types.Int64 `tfsdk:"run_as_user"`
	RunAsGroup   types.Int64 `tfsdk:"run_as_group"`
	RunAsNonRoot types.Bool  `tfsdk:"run_as_non_root"`
	FSGroup      types.Int64 `tfsdk:"fs_group"`
}

// Volume is a volume of the pod; exactly one source is set (or the overlay
// gives the source of a volume of the same name).
type Volume struct {
	Name                  types.String     `tfsdk:"name"`
	EmptyDir              *EmptyDir        `tfsdk:"empty_dir"`
	PersistentVolumeClaim *ClaimSource     `tfsdk:"persistent_volume_claim"`
	ConfigMap             *ConfigMapSource `tfsdk:"config_map"`
	Secret                *SecretSource    `tfsdk:"secret"`
	HostPath              *HostPathSource  `tfsdk:"host_path"`
}

// EmptyDir is a scratch directory; `empty_dir = {}` for the defaults.
type EmptyDir struct {
	Medium    types.String `tfsdk:"medium"`
	SizeLimit types.String `tfsdk:"size_limit"`
}

// ClaimSource mounts a PersistentVolumeClaim.
type ClaimSource struct {
	ClaimName types.String `tfsdk:"claim_name"`
	ReadOnly  types.Bool   `tfsdk:"read_only"`
}

// KeyPath projects one key of a ConfigMap or Secret to a file.
type KeyPath struct {
	Key  types.String `tfsdk:"key"`
	Path types.String `tfsdk:"path"`
}

// ConfigMapSource mounts a ConfigMap's keys as files.
type ConfigMapSource struct {
	Name        types.String `tfsdk:"name"`
	Optional    types.Bool   `tfsdk:"optional"`
	DefaultMode types.Int64  `tfsdk:"default_mode"`
	Items       []KeyPath    `tfsdk:"items"`
}

// SecretSource mounts a Secret's keys as files.
type SecretSource struct {
	SecretName  types.String `tfsdk:"secret_name"`
	Optional    types.Bool   `tfsdk:"optional"`
	DefaultMode types.Int64  `tfsdk:"default_mode"`
	Items       []KeyPath    `tfsdk:"items"`
}

// HostPathSource mounts a directory of the node.
type HostPathSource struct {
	Path types.String `tfsdk:"path"`
	Type types.String `tfsdk:"type"`
}

// Container returns the container of that name among containers and init
// containers, or nil.
func (t *Template) Container(name string) *Container {
	if t == nil {
		return nil
	}
	for _, list := range [][]Container{t.Containers, t.InitContainers} {
		for i := range list {
			if list[i].Name.ValueString() == name {
				return &list[i]
			}
		}
	}
	return nil
}
