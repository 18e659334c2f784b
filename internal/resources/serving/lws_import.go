package serving

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// An import tells the truth: what an adopted LeaderWorkerSet carries that
// no typed attribute says is named in a warning — the template fields the
// generated configuration carries in pod_template, and the fields the
// configuration cannot express at all (the object's own labels, a subgroup
// policy, …), which an apply leaves to the manager that set them.

// lwsResource is aiplatform_lws_group: the generic object resource, whose
// import also warns.
type lwsResource struct {
	*object.Resource[lwsGroupModel, *lwsGroupModel]
	client *kube.Client
}

var _ resource.ResourceWithImportState = (*lwsResource)(nil)

func (r *lwsResource) Configure(ctx context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.Resource.Configure(ctx, req, resp)
	r.client, _ = req.ProviderData.(*kube.Client)
}

func (r *lwsResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.Resource.ImportState(ctx, req, resp)
	if resp.Diagnostics.HasError() || r.client == nil {
		return
	}
	ref, err := kube.ParseImportID(req.ID, true)
	if err != nil {
		return
	}
	live, found, err := r.client.Get(ctx, lwsKind, ref)
	if err != nil || !found {
		return // the read that follows reports it
	}
	var m lwsGroupModel
	readLWS(live.Object, &m)
	carried, lost := importReport(live.Object, &m)
	if len(carried) == 0 && len(lost) == 0 {
		return
	}
	var b strings.Builder
	if len(carried) > 0 {
		fmt.Fprintf(&b, "No typed attribute expresses these fields; the imported pod_template carries them, so the generated configuration reproduces them:\n  %s\n",
			strings.Join(carried, "\n  "))
	}
	if len(lost) > 0 {
		fmt.Fprintf(&b, "The configuration cannot express these fields; an apply leaves them as they are, to the manager that set them:\n  %s\n",
			strings.Join(lost, "\n  "))
	}
	resp.Diagnostics.AddWarning(fmt.Sprintf("Imported LeaderWorkerSet %s carries fields beyond the typed attributes", ref), b.String())
}

// importReport lists, for a LeaderWorkerSet read into m on import, the
// template fields m carries in pod_template (carried) and the fields no
// attribute carries (lost), each by its path in the object.
func importReport(live map[string]any, m *lwsGroupModel) (carried, lost []string) {
	for _, role := range []struct {
		field string
		t     *podTemplateModel
	}{{"leaderTemplate", m.Leader}, {"workerTemplate", m.Worker}} {
		if role.t == nil || !object.Known(role.t.PodTemplate) {
			continue
		}
		doc, err := podtemplate.Decode[corev1.PodTemplateSpec](role.t.PodTemplate.ValueString())
		if err != nil {
			continue
		}
		for _, p := range podtemplate.Paths(doc) {
			carried = append(carried, "spec.leaderWorkerTemplate."+role.field+"."+p)
		}
	}
	written := kube.NewObject(lwsKind, m.ObjectRef(), lwsFields(m)).Object
	for _, p := range uncovered(map[string]any{"metadata": metaOf(live), "spec": live["spec"]}, written, "") {
		if !lwsDefault(p, live) {
			lost = append(lost, p)
		}
	}
	sort.Strings(lost)
	return carried, lost
}

// metaOf is the part of an object's metadata a configuration could set.
func metaOf(live map[string]any) map[string]any {
	meta := map[string]any{}
	for _, k := range []string{"labels", "annotations"} {
		if v := object.Fields(live, "metadata", k); len(v) > 0 {
			meta[k] = v
		}
	}
	return meta
}

// uncovered lists the paths of the leaves of live that written does not
// set; the pod templates are podtemplate's (a template import carries them
// whole).
func uncovered(live, written any, at string) []string {
	l, ok := live.(map[string]any)
	if !ok {
		return nil
	}
	w, _ := written.(map[string]any)
	var out []string
	for k, v := range l {
		p := fieldPath(at, k)
		if p == "spec.leaderWorkerTemplate.leaderTemplate" || p == "spec.leaderWorkerTemplate.workerTemplate" {
			continue
		}
		wv, has := w[k]
		if sub, isMap := v.(map[string]any); isMap && len(sub) > 0 {
			out = append(out, uncovered(v, wv, p)...)
			continue
		}
		if !has {
			out = append(out, p)
		}
	}
	return out
}

func fieldPath(at, k string) string {
	if strings.ContainsAny(k, "./") {
		return fmt.Sprintf("%s[%q]", at, k)
	}
	if at == "" {
		return k
	}
	return at + "." + k
}

// lwsDefault says whether a path that no attribute sets holds what the LWS
// webhook or kubectl fill in.
func lwsDefault(p string, live map[string]any) bool {
	switch p {
	case "spec.networkConfig.subdomainPolicy":
		return object.Field(live, "spec", "networkConfig", "subdomainPolicy") == "Shared"
	case "spec.rolloutStrategy.rollingUpdateConfiguration.partition":
		n := object.Int64(object.Field(live, "spec", "rolloutStrategy", "rollingUpdateConfiguration", "partition"))
		return n.ValueInt64() == 0
	case `metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`:
		return true
	}
	return false
}
