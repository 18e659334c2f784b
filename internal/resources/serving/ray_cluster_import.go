package serving

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Import: what an imported RayCluster says that its configuration cannot.
// The pod templates carry everything (what their typed attributes cannot
// say goes in pod_template); what is left are the RayCluster's own fields
// beyond the attributes (a group's numOfHosts or idleTimeoutSeconds, the
// head Service, …). An apply that takes them over — workerGroupSpecs is an
// atomic list, so a forced apply takes all of it — would change or drop
// them: the import says so, with their paths, and the plan shows and
// refuses such a change unless accept_live_changes lists it.

// objectResource is what object.New returns.
type objectResource interface {
	resource.ResourceWithConfigure
	resource.ResourceWithImportState
	resource.ResourceWithValidateConfig
	resource.ResourceWithModifyPlan
}

// importWarned is an object resource whose import warns of the live
// object's fields no attribute carries: unexpressed lists their paths.
// (aiplatform_ray_cluster and aiplatform_ray_service.)
type importWarned[T any] struct {
	objectResource
	client      *kube.Client
	kind        kube.Kind
	typeName    string
	unexpressed func(live map[string]any, m *T) []string
}

func withImportWarnings(r resource.Resource) resource.Resource {
	return withImportWarningsOf(r, rayClusterKind, "aiplatform_ray_cluster", rayUnexpressed)
}

func withImportWarningsOf[T any](r resource.Resource, kind kube.Kind, typeName string, unexpressed func(map[string]any, *T) []string) resource.Resource {
	return &importWarned[T]{objectResource: r.(objectResource), kind: kind, typeName: typeName, unexpressed: unexpressed}
}

func (r *importWarned[T]) Configure(ctx context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.objectResource.Configure(ctx, req, resp)
	r.client, _ = req.ProviderData.(*kube.Client)
}

// Read reads as every object resource does and, on import (a state with
// nothing but the object's name: no ray_version), warns of what the
// configuration cannot say.
func (r *importWarned[T]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var version types.String
	importing := !req.State.GetAttribute(ctx, path.Root("ray_version"), &version).HasError() && version.IsNull()
	r.objectResource.Read(ctx, req, resp)
	if !importing || resp.Diagnostics.HasError() || r.client == nil || resp.State.Raw.IsNull() {
		return
	}
	var m T
	if resp.Diagnostics.Append(resp.State.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	var ns, name types.String
	resp.State.GetAttribute(ctx, path.Root("name"), &name)
	if r.kind.Namespaced {
		resp.State.GetAttribute(ctx, path.Root("namespace"), &ns)
	}
	ref := kube.Ref{Namespace: ns.ValueString(), Name: name.ValueString()}
	live, found, err := r.client.Get(ctx, r.kind, ref)
	if err != nil || !found {
		return
	}
	if paths := r.unexpressed(live.Object, &m); len(paths) > 0 {
		resp.Diagnostics.AddWarning(fmt.Sprintf("%s %s has fields its configuration cannot say", r.kind.Kind, ref),
			"The imported object sets these fields, which no attribute of "+r.typeName+" carries:\n  "+strings.Join(paths, "\n  ")+
				"\nThey stay as they are until an apply takes them over: a forced apply (force_conflicts) takes the whole atomic "+
				"workerGroupSpecs list and would change or drop those under it. Such a plan shows them and is refused unless "+
				"accept_live_changes lists them.")
	}
}

// rayUnexpressed lists the paths where the live object's spec differs from
// what an apply of m would send (as adjusted from the live object), leaving
// out what KubeRay's CRD defaults and what the autoscaler and Kueue own.
func rayUnexpressed(live map[string]any, m *rayClusterModel) []string {
	fields := rayClusterFields(m)
	rayKeepLive(fields, live)
	keepAutoscalerReplicas(m, fields, live)
	want := rayCopy(object.Fields(fields, "spec"))
	have := rayCopy(object.Fields(live, "spec"))
	if have == nil || want == nil {
		return nil
	}
	rayDropGroupDefaults(want, have)
	if object.Known(m.QueueName) {
		delete(have, "suspend") // Kueue's
		delete(want, "suspend")
	}
	return kube.ChangedPaths(map[string]any{"spec": have}, map[string]any{"spec": want})
}

// rayDropGroupDefaults removes from the live cluster spec have the worker
// groups' fields that KubeRay's CRD defaults and want does not write.
func rayDropGroupDefaults(want, have map[string]any) {
	wgroups := map[any]map[string]any{}
	for _, g := range object.Items(want, "workerGroupSpecs") {
		wgroups[g["groupName"]] = g
	}
	for _, g := range object.Items(have, "workerGroupSpecs") {
		w := wgroups[g["groupName"]]
		for k, def := range map[string]int64{"numOfHosts": 1, "maxReplicas": kuberayMaxReplicas, "minReplicas": 0, "replicas": 0} {
			if _, set := w[k]; !set && object.Int64(g[k]).ValueInt64() == def && g[k] != nil {
				delete(g, k)
			}
		}
	}
}
