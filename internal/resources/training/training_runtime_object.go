package training

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Apply and read: the runtime's fields from the model, and the model read
// back from the live runtime without inventing a diff.

// ---- model → object -------------------------------------------------------

// procsPerNode is the MPI policy's numProcPerNode: configured, else the GPUs
// per node, else 1.
func (m *runtimeModel) procsPerNode() int64 {
	if object.Known(m.ProcsPerNode) {
		return m.ProcsPerNode.ValueInt64()
	}
	if g := m.gpus(); g > 0 {
		return g
	}
	return 1
}

func stringMap(kv map[string]string) types.Map {
	if len(kv) == 0 {
		return types.MapNull(types.StringType)
	}
	el := make(map[string]attr.Value, len(kv))
	for k, v := range kv {
		el[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, el)
}

// nodeContainer is the trainer container "node" of the typed attributes;
// withCommand is false for the sshd nodes of an MPI runtime.
func (m *runtimeModel) nodeContainer(withCommand bool) podtemplate.Container {
	c := podtemplate.Container{Name: types.StringValue(runtimeNode), Image: m.Image,
		Requests: types.MapNull(types.StringType), Limits: types.MapNull(types.StringType)}
	if withCommand {
		c.Command, c.Args = m.Command, m.Args
	}
	env := object.Strings(m.Env)
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, n := range names {
		c.Env = append(c.Env, podtemplate.EnvVar{Name: types.StringValue(n), Value: types.StringValue(env[n])})
	}
	for _, s := range m.SecretEnv {
		c.Env = append(c.Env, podtemplate.EnvVar{Name: s.Name, Value: types.StringNull(), ValueFrom: &podtemplate.EnvSource{
			SecretKeyRef: &podtemplate.KeyRef{Name: s.Secret, Key: s.Key, Optional: types.BoolNull()}}})
	}
	if m.Checkpoint != nil {
		c.Env = append(c.Env, podtemplate.EnvVar{Name: types.StringValue(m.checkpointEnv()), Value: types.StringValue(m.checkpointPath())})
		c.VolumeMounts = []podtemplate.VolumeMount{{Name: types.StringValue(checkpointVolume),
			MountPath: types.StringValue(m.checkpointPath()), SubPath: types.StringNull(), ReadOnly: types.BoolNull()}}
	}
	requests, limits := map[string]string{}, map[string]string{}
	if r := m.Resources; r != nil {
		if object.Known(r.CPU) {
			requests["cpu"] = r.CPU.ValueString()
		}
		if object.Known(r.Memory) {
			requests["memory"] = r.Memory.ValueString()
		}
	}
	if g := m.gpus(); g > 0 {
		requests[m.gpuResource()] = strconv.FormatInt(g, 10)
		limits[m.gpuResource()] = strconv.FormatInt(g, 10)
	}
	c.Requests, c.Limits = stringMap(requests), stringMap(limits)
	return c
}

// podTemplate is the pod template of a replicated job: the user's template
// with the trainer container first, the checkpoint volume, and the
// top-level placement. The model's own slices are not changed.
func (m *runtimeModel) podTemplate(withCommand bool) *podtemplate.Template {
	var t podtemplate.Template
	if m.Template != nil {
		t = *m.Template
	} else {
		t = podtemplate.Template{Labels: types.MapNull(types.StringType), Annotations: types.MapNull(types.StringType),
			NodeSelector: types.MapNull(types.StringType)}
	}
	t.Containers = append([]podtemplate.Container{m.nodeContainer(withCommand)}, t.Containers...)
	if m.Checkpoint != nil {
		t.Volumes = append(append([]podtemplate.Volume(nil), t.Volumes...), podtemplate.Volume{Name: types.StringValue(checkpointVolume),
			PersistentVolumeClaim: &podtemplate.ClaimSource{ClaimName: m.Checkpoint.ClaimName, ReadOnly: types.BoolNull()}})
	}
	if !m.NodeSelector.IsNull() {
		t.NodeSelector = m.NodeSelector
	}
	if m.Tolerations != nil {
		t.Tolerations = m.Tolerations
	}
	if !m.PriorityClassName.IsNull() {
		t.PriorityClassName = m.PriorityClassName
	}
	return &t
}

// podObject is a replicated job's pod template as written.
func (m *runtimeModel) podObject(withCommand bool) map[string]any {
	obj := m.podTemplate(withCommand).Object()
	if m.FailurePolicy != nil {
		spec, _ := obj["spec"].(map[string]any)
		spec["restartPolicy"] = "Never"
	}
	return obj
}

func (m *runtimeModel) replicatedJob(name string, ancestor, withCommand bool) map[string]any {
	jobSpec := map[string]any{"template": m.podObject(withCommand)}
	if m.FailurePolicy != nil {
		jobSpec["backoffLimit"] = int64(0)
	}
	tmpl := map[string]any{"spec": jobSpec}
	if ancestor {
		tmpl["metadata"] = map[string]any{"labels": map[string]any{ancestorLabel: ancestorTrainer}}
	}
	return map[string]any{"name": name, "template": tmpl}
}

func runtimeFields(m *runtimeModel) map[string]any {
	labels := map[string]any{frameworkLabel: m.framework()}
	ml := map[string]any{"numNodes": m.NumNodes.ValueInt64()}
	jobset := map[string]any{}
	switch m.framework() {
	case FrameworkJAX:
		ml["jax"] = map[string]any{}
	case FrameworkMPI, FrameworkDeepSpeed:
		ml["mpi"] = map[string]any{"numProcPerNode": m.procsPerNode(), "mpiImplementation": "OpenMPI", "runLauncherAsNode": true}
		// Upstream's MPI shape: sshd nodes, then a launcher (the trainer
		// step, also a node) once they are Ready; the launcher's success
		// is the job's.
		jobset["network"] = map[string]any{"publishNotReadyAddresses": true}
		jobset["successPolicy"] = map[string]any{"operator": "All", "targetReplicatedJobs": []any{runtimeLauncher}}
		launcher := m.replicatedJob(runtimeLauncher, true, true)
		launcher["dependsOn"] = []any{map[string]any{"name": runtimeNode, "status": "Ready"}}
		jobset["replicatedJobs"] = []any{m.replicatedJob(runtimeNode, false, false), launcher}
	default:
		ml["torch"] = map[string]any{}
	}
	if jobset["replicatedJobs"] == nil {
		jobset["replicatedJobs"] = []any{m.replicatedJob(runtimeNode, true, true)}
	}
	if m.FailurePolicy != nil {
		jobset["failurePolicy"] = map[string]any{"maxRestarts": m.FailurePolicy.MaxRestarts.ValueInt64()}
	}
	spec := map[string]any{"mlPolicy": ml, "template": map[string]any{"spec": jobset}}
	if g := m.Gang; g != nil {
		switch {
		case object.Known(g.KueueQueue):
			labels[runtimeQueueLabel] = g.KueueQueue.ValueString()
		case g.Scheduler.ValueString() == SchedulerVolcano:
			spec["podGroupPolicy"] = map[string]any{"volcano": map[string]any{}}
		case g.Scheduler.ValueString() == SchedulerCoscheduling:
			cs := map[string]any{}
			if secs, ok := seconds(g.ScheduleTimeout); ok {
				cs["scheduleTimeoutSeconds"] = secs
			}
			spec["podGroupPolicy"] = map[string]any{"coscheduling": cs}
		}
	}
	return map[string]any{"metadata": map[string]any{"labels": labels}, "spec": spec}
}

// seconds is a duration attribute in whole seconds.
func seconds(s types.String) (int64, bool) {
	if !object.Known(s) {
		return 0, false
	}
	d, err := validators.ParseDuration(s.ValueString(), 0, 1<<62)
	if err != nil {
		return 0, false
	}
	return int64(d.Seconds()), true
}

func durationText(secs int64) string {
	switch {
	case secs != 0 && secs%3600 == 0:
		return fmt.Sprintf("%dh", secs/3600)
	case secs != 0 && secs%60 == 0:
		return fmt.Sprintf("%dm", secs/60)
	}
	return fmt.Sprintf("%ds", secs)
}

// ---- object → model -------------------------------------------------------

// trainerJob is the replicated job that carries the trainer step: the one
// labelled as its ancestor, else "node".
func trainerJob(jobset map[string]any) map[string]any {
	var node map[string]any
	for _, j := range object.Items(jobset, "replicatedJobs") {
		if object.Field(j, "template", "metadata", "labels", ancestorLabel) == ancestorTrainer {
			return j
		}
		if j["name"] == runtimeNode {
			node = j
		}
	}
	return node
}

func readRuntime(live map[string]any, m *runtimeModel) {
	prior := *m
	imported := m.Framework.IsNull() && m.Image.IsNull()
	labels := object.Fields(live, "metadata", "labels")
	spec := object.Fields(live, "spec")
	ml := object.Fields(spec, "mlPolicy")

	fw, _ := labels[frameworkLabel].(string)
	switch {
	case ml["torch"] != nil:
		fw = FrameworkTorch
	case ml["jax"] != nil:
		fw = FrameworkJAX
	case ml["mpi"] != nil && fw != FrameworkDeepSpeed:
		fw = FrameworkMPI
	}
	if fw != "" {
		m.Framework = types.StringValue(fw)
	}
	m.NumNodes = object.Int64(ml["numNodes"])
	if m.NumNodes.IsNull() {
		m.NumNodes = types.Int64Value(1) // the CRD's default
	}

	jobset := object.Fields(spec, "template", "spec")
	job := trainerJob(jobset)
	pod, _ := object.Field(job, "template", "spec", "template").(map[string]any)
	readFailurePolicy(jobset, pod, m)
	if m.FailurePolicy != nil && pod != nil {
		pod = copyWithout(pod, "restartPolicy")
	}
	var priorTmpl *podtemplate.Template
	if !imported {
		priorTmpl = prior.podTemplate(true)
	}
	t := podtemplate.Read(pod, priorTmpl)
	if t == nil {
		t = &podtemplate.Template{}
	}
	readNode(t, &prior, m)
	readGang(labels, spec, prior.Gang, m)
	if m.mpi() {
		v := object.Int64(object.Field(ml, "mpi", "numProcPerNode"))
		m.ProcsPerNode = v
		if prior.ProcsPerNode.IsNull() && !v.IsNull() {
			d := *m
			d.ProcsPerNode = types.Int64Null()
			if d.procsPerNode() == v.ValueInt64() {
				m.ProcsPerNode = types.Int64Null() // the default
			}
		}
	}
	// Placement is the top level's; the rest is the template's.
	m.NodeSelector, t.NodeSelector = t.NodeSelector, types.MapNull(types.StringType)
	m.Tolerations, t.Tolerations = t.Tolerations, nil
	if m.Tolerations != nil && len(m.Tolerations) == 0 && prior.Tolerations == nil {
		m.Tolerations = nil
	}
	m.PriorityClassName, t.PriorityClassName = t.PriorityClassName, types.StringNull()
	if imported && pod != nil {
		// What neither the typed attributes nor the template's typed
		// fields say becomes the template's pod_template overlay.
		t.PodTemplate = types.StringNull()
		m.Template = t
		combined := m.podTemplate(true)
		combined.PodTemplate = types.StringNull()
		if rem := podtemplate.Remainder(pod, combined); rem != nil {
			if b, err := yaml.Marshal(rem); err == nil {
				t.PodTemplate = types.StringValue(string(b))
			}
		}
	}
	m.Template = t
	if prior.Template == nil && emptyTemplate(t) {
		m.Template = nil
	}
	setComputed(m)
}

func copyWithout(pod map[string]any, specKey string) map[string]any {
	out := map[string]any{}
	for k, v := range pod {
		out[k] = v
	}
	if spec, ok := pod["spec"].(map[string]any); ok {
		s := map[string]any{}
		for k, v := range spec {
			if k != specKey {
				s[k] = v
			}
		}
		out["spec"] = s
	}
	return out
}

func readFailurePolicy(jobset, pod map[string]any, m *runtimeModel) {
	mr := object.Int64(object.Field(jobset, "failurePolicy", "maxRestarts"))
	if mr.IsNull() || object.Field(pod, "spec", "restartPolicy") != "Never" {
		m.FailurePolicy = nil
		return
	}
	m.FailurePolicy = &runtimeFailurePolicy{MaxRestarts: mr}
}

// readNode moves the trainer container and the checkpoint volume out of the
// template into the typed attributes.
func readNode(t *podtemplate.Template, prior, m *runtimeModel) {
	var node *podtemplate.Container
	var rest []podtemplate.Container
	for i := range t.Containers {
		if t.Containers[i].Name.ValueString() == runtimeNode && node == nil {
			node = &t.Containers[i]
			continue
		}
		rest = append(rest, t.Containers[i])
	}
	if rest == nil && prior.Template != nil && prior.Template.Containers != nil {
		rest = []podtemplate.Container{}
	}
	t.Containers = rest
	if node == nil {
		node = &podtemplate.Container{Image: types.StringNull()}
	}
	m.Image = node.Image
	m.Command = node.Command
	m.Args = node.Args

	// The checkpoint: its volume, the node's mount of it, the variable.
	var claim types.String
	var vols []podtemplate.Volume
	for _, v := range t.Volumes {
		if v.Name.ValueString() == checkpointVolume && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
			continue
		}
		vols = append(vols, v)
	}
	if vols == nil && prior.Template != nil && prior.Template.Volumes != nil {
		vols = []podtemplate.Volume{}
	}
	t.Volumes = vols
	m.Checkpoint = nil
	mountPath := ""
	for _, vm := range node.VolumeMounts {
		if vm.Name.ValueString() == checkpointVolume {
			mountPath = vm.MountPath.ValueString()
		}
	}
	if !claim.IsNull() && mountPath != "" {
		m.Checkpoint = &runtimeCheckpoint{ClaimName: claim, MountPath: types.StringValue(mountPath), Env: types.StringNull()}
	}

	ckEnv := ""
	if m.Checkpoint != nil {
		want := prior.checkpointEnv()
		for _, e := range node.Env {
			if e.ValueFrom != nil || e.Value.ValueString() != mountPath {
				continue
			}
			if e.Name.ValueString() == want || (prior.Checkpoint == nil && ckEnv == "") {
				ckEnv = e.Name.ValueString()
			}
		}
		switch {
		case ckEnv != "":
			m.Checkpoint.Env = types.StringValue(ckEnv)
		case prior.Checkpoint == nil:
			m.Checkpoint = nil // a mount without the variable: the overlay's on import
		default:
			m.Checkpoint.Env = types.StringValue("") // removed out of band: planned back
		}
	}
	env := map[string]string{}
	var secrets []runtimeSecretEnv
	for _, e := range node.Env {
		name := e.Name.ValueString()
		switch {
		case name == ckEnv:
		case e.ValueFrom == nil:
			env[name] = e.Value.ValueString()
		case e.ValueFrom.SecretKeyRef != nil:
			secrets = append(secrets, runtimeSecretEnv{Name: e.Name, Secret: e.ValueFrom.SecretKeyRef.Name, Key: e.ValueFrom.SecretKeyRef.Key})
		}
	}
	m.Env = object.StringMap(anyMap(env), prior.Env)
	m.SecretEnv = secrets

	// Resources: GPUs (limit), CPU and memory (requests).
	gpuRes := prior.gpuResource()
	requests, limits := object.Strings(node.Requests), object.Strings(node.Limits)
	r := &runtimeResources{GPUs: types.Int64Null(), GPUResource: types.StringValue(gpuRes), CPU: types.StringNull(), Memory: types.StringNull()}
	if g, ok := limits[gpuRes]; ok {
		if q, err := validators.ParseQuantity(g); err == nil {
			r.GPUs = types.Int64Value(q.Value())
		}
	}
	if v, ok := requests["cpu"]; ok {
		r.CPU = types.StringValue(v)
	}
	if v, ok := requests["memory"]; ok {
		r.Memory = types.StringValue(v)
	}
	if p := prior.Resources; p != nil && object.Known(p.GPUs) && p.GPUs.ValueInt64() == 0 && r.GPUs.IsNull() {
		r.GPUs = p.GPUs
	}
	m.Resources = r
	if prior.Resources == nil && r.GPUs.IsNull() && r.CPU.IsNull() && r.Memory.IsNull() {
		m.Resources = nil
	}
}

func anyMap(in map[string]string) map[string]any {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func readGang(labels, spec map[string]any, prior *runtimeGang, m *runtimeModel) {
	m.Gang = nil
	g := &runtimeGang{KueueQueue: types.StringNull(), Scheduler: types.StringNull(), ScheduleTimeout: types.StringNull()}
	pg := object.Fields(spec, "podGroupPolicy")
	switch {
	case labels[runtimeQueueLabel] != nil:
		g.KueueQueue = object.String(labels[runtimeQueueLabel], types.StringNull())
	case pg["volcano"] != nil:
		g.Scheduler = types.StringValue(SchedulerVolcano)
	case pg["coscheduling"] != nil:
		g.Scheduler = types.StringValue(SchedulerCoscheduling)
		secs := object.Int64(object.Field(pg, "coscheduling", "scheduleTimeoutSeconds"))
		var p types.String
		if prior != nil {
			p = prior.ScheduleTimeout
		}
		switch ps, ok := seconds(p); {
		case secs.IsNull():
		case ok && ps == secs.ValueInt64():
			g.ScheduleTimeout = p
		case p.IsNull() && secs.ValueInt64() == coschedulingDefaultTimeout:
		default:
			g.ScheduleTimeout = types.StringValue(durationText(secs.ValueInt64()))
		}
	default:
		return
	}
	m.Gang = g
}

func emptyTemplate(t *podtemplate.Template) bool {
	return len(t.Containers) == 0 && len(t.InitContainers) == 0 && len(t.Volumes) == 0 && t.Labels.IsNull() &&
		t.Annotations.IsNull() && t.ServiceAccountName.IsNull() && t.Affinity.IsNull() && t.RuntimeClassName.IsNull() &&
		len(t.ImagePullSecrets) == 0 && t.SecurityContext == nil && t.PodTemplate.IsNull()
}

// setComputed sets kind and gpus_total.
func setComputed(m *runtimeModel) {
	m.Kind = types.StringValue(ClusterTrainingRuntimeKind.Kind)
	if m.namespaced() {
		m.Kind = types.StringValue(TrainingRuntimeKind.Kind)
	}
	m.GPUsTotal = types.Int64Unknown()
	if object.Known(m.NumNodes) && (m.Resources == nil || !m.Resources.GPUs.IsUnknown()) {
		m.GPUsTotal = types.Int64Value(m.NumNodes.ValueInt64() * m.gpus())
	}
}
