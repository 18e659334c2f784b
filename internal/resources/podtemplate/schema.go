package podtemplate

import (
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

var absPath = regexp.MustCompile(`^/`)

// Attribute is the pod template as one nested attribute.
func Attribute(desc string, required bool) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Required: required, Optional: !required,
		MarkdownDescription: desc,
		Attributes:          Attributes(),
	}
}

// Attributes are the pod template's attributes, for a resource that puts
// them beside its own (the model then embeds Template).
func Attributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Labels of the pods.", Validators: []validator.Map{validators.Labels()}},
		"annotations": schema.MapAttribute{ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Annotations of the pods.",
			Validators:          []validator.Map{mapvalidator.KeysAre(validators.QualifiedName())}},
		"containers": schema.ListNestedAttribute{Required: true,
			MarkdownDescription: "The pod's containers, the main one and any sidecars. Each is named: an imported object's names are kept, " +
				"and a container is only ever changed by its name, never added beside one of another name.",
			NestedObject: schema.NestedAttributeObject{Attributes: containerAttributes(false)},
			Validators:   []validator.List{listvalidator.SizeAtLeast(1)}},
		"init_containers": schema.ListNestedAttribute{Optional: true,
			MarkdownDescription: "Containers run to completion before the others start; with `restart_policy = \"Always\"` an init container is a sidecar that runs beside them.",
			NestedObject:        schema.NestedAttributeObject{Attributes: containerAttributes(true)}},
		"volumes": schema.ListNestedAttribute{Optional: true, MarkdownDescription: "Volumes the containers mount by name.",
			NestedObject: schema.NestedAttributeObject{Attributes: volumeAttributes()}},
		"service_account_name": schema.StringAttribute{Optional: true, MarkdownDescription: "Service account the pods run as; the namespace's `default` when unset.",
			Validators: []validator.String{validators.DNSSubdomain()}},
		"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Labels of the nodes the pods may run on.", Validators: []validator.Map{validators.Labels()}},
		"tolerations": object.TolerationsAttribute("Taints the pods tolerate (GPU pools are commonly tainted)."),
		"affinity": schema.StringAttribute{Optional: true,
			MarkdownDescription: "The pods' affinity as JSON (`jsonencode({ nodeAffinity = … })`), in the API's field names; checked against `Affinity` at plan time.",
			Validators:          []validator.String{Strict[affinity]("an Affinity")}},
		"priority_class_name": schema.StringAttribute{Optional: true, MarkdownDescription: "PriorityClass of the pods.",
			Validators: []validator.String{validators.DNSSubdomain()}},
		"runtime_class_name": schema.StringAttribute{Optional: true, MarkdownDescription: "RuntimeClass of the pods, e.g. `nvidia`.",
			Validators: []validator.String{validators.DNSSubdomain()}},
		"image_pull_secrets": schema.ListAttribute{ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Names of Secrets with registry credentials.",
			Validators:          []validator.List{listvalidator.ValueStringsAre(validators.DNSSubdomain())}},
		"security_context": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "The pods' security context (its other fields go in `pod_template`).",
			Attributes: map[string]schema.Attribute{
				"run_as_user":     int64Attr("UID the containers run as.", int64validator.AtLeast(0)),
				"run_as_group":    int64Attr("GID the containers run as.", int64validator.AtLeast(0)),
				"run_as_non_root": boolAttr("Refuse to start containers that would run as root."),
				"fs_group":        int64Attr("Group that owns the pod's volumes.", int64validator.AtLeast(0)),
			}},
		"pod_template": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Anything else a pod template can say, as YAML or JSON of a `PodTemplateSpec` " +
				"(`yamlencode({ spec = { hostNetwork = true } })`), merged under the typed attributes: containers and volumes by name. " +
				"Checked against `PodTemplateSpec` at plan time; a field the typed attributes also set is refused.",
			Validators: []validator.String{Overlay()}},
	}
}

// ManagedAttribute is Attribute for a resource that builds one container
// of the pod from attributes of its own (a Ray group's Ray container, from
// its cpu, memory, gpus and image): containers are optional, and a
// container's image may be left unset for the resource to fill in. The
// resource checks that every other container has an image.
func ManagedAttribute(desc string) schema.SingleNestedAttribute {
	attrs := Attributes()
	inner := containerAttributes(false)
	inner["image"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "Container image; required except for the container the resource builds itself, whose image it sets.",
		Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}}
	attrs["containers"] = schema.ListNestedAttribute{Optional: true,
		MarkdownDescription: "The pod's containers: the one the resource builds (listed by its name to add to it) and any sidecars. " +
			"An imported object's names are kept, and a container is only ever changed by its name, never added beside one of another name.",
		NestedObject: schema.NestedAttributeObject{Attributes: inner}}
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: desc, Attributes: attrs}
}

func containerAttributes(init bool) map[string]schema.Attribute {
	attrs := map[string]schema.Attribute{
		"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the container, unique in the pod.",
			Validators: []validator.String{validators.DNSLabel()}},
		"image": schema.StringAttribute{Required: true, MarkdownDescription: "Container image.",
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
		"image_pull_policy": schema.StringAttribute{Optional: true,
			MarkdownDescription: "`Always`, `IfNotPresent` or `Never`; Kubernetes' default (`Always` for `:latest`, else `IfNotPresent`) when unset.",
			Validators:          []validator.String{stringvalidator.OneOf("Always", "IfNotPresent", "Never")}},
		"command":     schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Entrypoint; the image's when unset."},
		"args":        schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Arguments; the image's when unset."},
		"working_dir": schema.StringAttribute{Optional: true, MarkdownDescription: "Working directory; the image's when unset."},
		"env": schema.ListNestedAttribute{Optional: true, MarkdownDescription: "Environment variables, in order.",
			NestedObject: schema.NestedAttributeObject{Attributes: envAttributes()}},
		"ports": schema.ListNestedAttribute{Optional: true, MarkdownDescription: "Ports the container listens on.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Optional: true, MarkdownDescription: "Port name, for probes and Services.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 15)}},
				"container_port": schema.Int64Attribute{Required: true, MarkdownDescription: "Port number.", Validators: []validator.Int64{int64validator.Between(1, 65535)}},
				"protocol": schema.StringAttribute{Optional: true, MarkdownDescription: "`TCP` (the default), `UDP` or `SCTP`.",
					Validators: []validator.String{stringvalidator.OneOf("TCP", "UDP", "SCTP")}},
				"host_port": int64Attr("Port on the node, rarely needed.", int64validator.Between(1, 65535)),
			}}},
		"requests": quantityMap("Resources requested, e.g. `{ cpu = \"500m\", memory = \"2Gi\" }`: what the scheduler reserves."),
		"limits": quantityMap("Resource limits, e.g. `{ cpu = \"1\", memory = \"4Gi\", \"nvidia.com/gpu\" = \"1\" }`. " +
			"Extended resources such as GPUs need a limit; their request is the limit when unset."),
		"volume_mounts": schema.ListNestedAttribute{Optional: true, MarkdownDescription: "Volumes of the pod mounted into the container.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of a volume of the pod."},
				"mount_path": schema.StringAttribute{Required: true, MarkdownDescription: "Where it appears in the container.",
					Validators: []validator.String{stringvalidator.RegexMatches(absPath, "must be an absolute path")}},
				"sub_path":  schema.StringAttribute{Optional: true, MarkdownDescription: "A directory of the volume to mount instead of its root."},
				"read_only": boolAttr("Mount read-only."),
			}}},
		"startup_probe":    probeAttribute("Startup probe: the other probes wait until it succeeds (e.g. while a model loads)."),
		"readiness_probe":  probeAttribute("Readiness probe: traffic only goes to ready pods."),
		"liveness_probe":   probeAttribute("Liveness probe: the container restarts when it fails."),
		"security_context": containerSecurityAttribute(),
	}
	if init {
		attrs["restart_policy"] = schema.StringAttribute{Optional: true,
			MarkdownDescription: "`Always` makes this init container a sidecar: it starts before and runs beside the containers.",
			Validators:          []validator.String{stringvalidator.OneOf("Always")}}
	} else {
		attrs["restart_policy"] = schema.StringAttribute{Optional: true,
			MarkdownDescription: "Only for init containers; must stay unset here.",
			Validators:          []validator.String{stringvalidator.OneOf("Always")}}
	}
	return attrs
}

func envAttributes() map[string]schema.Attribute {
	keyRef := func(what string) schema.SingleNestedAttribute {
		return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A key of a " + what + " in the pod's namespace.",
			Attributes: map[string]schema.Attribute{
				"name":     schema.StringAttribute{Required: true, MarkdownDescription: "Name of the " + what + ".", Validators: []validator.String{validators.DNSSubdomain()}},
				"key":      schema.StringAttribute{Required: true, MarkdownDescription: "The key.", Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
				"optional": boolAttr("Start the container even when the " + what + " or key is missing."),
			}}
	}
	return map[string]schema.Attribute{
		"name":  schema.StringAttribute{Required: true, MarkdownDescription: "Variable name.", Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
		"value": schema.StringAttribute{Optional: true, MarkdownDescription: "Its value (or set `value_from`)."},
		"value_from": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Where its value comes from; exactly one of these.",
			Attributes: map[string]schema.Attribute{
				"secret_key_ref":     keyRef("Secret"),
				"config_map_key_ref": keyRef("ConfigMap"),
				"field_ref": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A field of the pod.",
					Attributes: map[string]schema.Attribute{
						"field_path": schema.StringAttribute{Required: true, MarkdownDescription: "e.g. `metadata.name`, `status.podIP`."},
					}},
				"resource_field_ref": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A request or limit of a container.",
					Attributes: map[string]schema.Attribute{
						"container_name": schema.StringAttribute{Optional: true, MarkdownDescription: "The container; this one when unset."},
						"resource":       schema.StringAttribute{Required: true, MarkdownDescription: "e.g. `limits.memory`."},
						"divisor":        schema.StringAttribute{Optional: true, MarkdownDescription: "Unit, e.g. `1Mi`.", Validators: []validator.String{validators.Quantity()}},
					}},
			}},
	}
}

func probeAttribute(desc string) schema.SingleNestedAttribute {
	port := schema.StringAttribute{Required: true, MarkdownDescription: "Port number or name."}
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: desc + " Exactly one of `http_get`, `tcp_socket`, `exec`, `grpc`.",
		Attributes: map[string]schema.Attribute{
			"http_get": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "An HTTP GET; 2xx and 3xx succeed.",
				Attributes: map[string]schema.Attribute{
					"path": schema.StringAttribute{Optional: true, MarkdownDescription: "Path, e.g. `/health`."},
					"port": port,
					"scheme": schema.StringAttribute{Optional: true, MarkdownDescription: "`HTTP` (the default) or `HTTPS`.",
						Validators: []validator.String{stringvalidator.OneOf("HTTP", "HTTPS")}},
				}},
			"tcp_socket": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A TCP connection.",
				Attributes: map[string]schema.Attribute{"port": port}},
			"exec": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A command; exit 0 succeeds.",
				Attributes: map[string]schema.Attribute{
					"command": schema.ListAttribute{ElementType: types.StringType, Required: true, MarkdownDescription: "The command.",
						Validators: []validator.List{listvalidator.SizeAtLeast(1)}},
				}},
			"grpc": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "The gRPC health service.",
				Attributes: map[string]schema.Attribute{
					"port":    schema.Int64Attribute{Required: true, MarkdownDescription: "Port number.", Validators: []validator.Int64{int64validator.Between(1, 65535)}},
					"service": schema.StringAttribute{Optional: true, MarkdownDescription: "Service name to ask about."},
				}},
			"initial_delay_seconds": int64Attr("Seconds before the first probe (default 0).", int64validator.AtLeast(0)),
			"period_seconds":        int64Attr("Seconds between probes (default 10).", int64validator.AtLeast(1)),
			"timeout_seconds":       int64Attr("Seconds before a probe times out (default 1).", int64validator.AtLeast(1)),
			"success_threshold":     int64Attr("Successes in a row that count (default 1; must be 1 for startup and liveness).", int64validator.AtLeast(1)),
			"failure_threshold":     int64Attr("Failures in a row that count (default 3).", int64validator.AtLeast(1)),
		}}
}

func containerSecurityAttribute() schema.SingleNestedAttribute {
	caps := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: desc}
	}
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "The container's security context (its other fields go in `pod_template`).",
		Attributes: map[string]schema.Attribute{
			"run_as_user":                int64Attr("UID the container runs as.", int64validator.AtLeast(0)),
			"run_as_group":               int64Attr("GID the container runs as.", int64validator.AtLeast(0)),
			"run_as_non_root":            boolAttr("Refuse to start as root."),
			"privileged":                 boolAttr("Run privileged."),
			"read_only_root_filesystem":  boolAttr("Mount the image read-only."),
			"allow_privilege_escalation": boolAttr("Allow setuid binaries to gain privileges."),
			"capabilities_add":           caps("Linux capabilities to add, e.g. `IPC_LOCK`."),
			"capabilities_drop":          caps("Linux capabilities to drop, e.g. `ALL`."),
		}}
}

func volumeAttributes() map[string]schema.Attribute {
	items := schema.ListNestedAttribute{Optional: true, MarkdownDescription: "Keys to project, each to a file; every key when unset.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"key":  schema.StringAttribute{Required: true, MarkdownDescription: "The key."},
			"path": schema.StringAttribute{Required: true, MarkdownDescription: "Relative file path."},
		}}}
	mode := int64Attr("File mode of the files, e.g. `420` (0644, the default).", int64validator.Between(0, 0o777))
	return map[string]schema.Attribute{
		"name": schema.StringAttribute{Required: true, MarkdownDescription: "Volume name, unique in the pod.", Validators: []validator.String{validators.DNSLabel()}},
		"empty_dir": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A scratch directory that lives as long as the pod: `empty_dir = {}`.",
			Attributes: map[string]schema.Attribute{
				"medium": schema.StringAttribute{Optional: true, MarkdownDescription: "`Memory` for a tmpfs (e.g. `/dev/shm` for NCCL).",
					Validators: []validator.String{stringvalidator.OneOf("", "Memory", "HugePages")}},
				"size_limit": schema.StringAttribute{Optional: true, MarkdownDescription: "Size limit, e.g. `16Gi`.", Validators: []validator.String{validators.Quantity()}},
			}},
		"persistent_volume_claim": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A PersistentVolumeClaim of the pod's namespace.",
			Attributes: map[string]schema.Attribute{
				"claim_name": schema.StringAttribute{Required: true, MarkdownDescription: "The claim.", Validators: []validator.String{validators.DNSSubdomain()}},
				"read_only":  boolAttr("Mount read-only."),
			}},
		"config_map": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A ConfigMap's keys as files.",
			Attributes: map[string]schema.Attribute{
				"name":         schema.StringAttribute{Required: true, MarkdownDescription: "The ConfigMap.", Validators: []validator.String{validators.DNSSubdomain()}},
				"optional":     boolAttr("Start even when the ConfigMap is missing."),
				"default_mode": mode,
				"items":        items,
			}},
		"secret": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A Secret's keys as files.",
			Attributes: map[string]schema.Attribute{
				"secret_name":  schema.StringAttribute{Required: true, MarkdownDescription: "The Secret.", Validators: []validator.String{validators.DNSSubdomain()}},
				"optional":     boolAttr("Start even when the Secret is missing."),
				"default_mode": mode,
				"items":        items,
			}},
		"host_path": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "A directory or file of the node.",
			Attributes: map[string]schema.Attribute{
				"path": schema.StringAttribute{Required: true, MarkdownDescription: "Path on the node.",
					Validators: []validator.String{stringvalidator.RegexMatches(absPath, "must be an absolute path")}},
				"type": schema.StringAttribute{Optional: true, MarkdownDescription: "`Directory`, `DirectoryOrCreate`, `File`, `FileOrCreate`, `Socket`, `CharDevice` or `BlockDevice`; no check when unset.",
					Validators: []validator.String{stringvalidator.OneOf("", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket", "CharDevice", "BlockDevice")}},
			}},
	}
}

func int64Attr(desc string, v ...validator.Int64) schema.Int64Attribute {
	return schema.Int64Attribute{Optional: true, MarkdownDescription: desc, Validators: v}
}

func boolAttr(desc string) schema.BoolAttribute {
	return schema.BoolAttribute{Optional: true, MarkdownDescription: desc}
}

func quantityMap(desc string) schema.MapAttribute {
	return schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: desc,
		Validators: []validator.Map{
			mapvalidator.KeysAre(validators.QualifiedName()),
			mapvalidator.ValueStringsAre(validators.Quantity()),
		}}
}
