package serving

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// The import report of aiplatform_lws_group (object.Spec.ImportReport):
// what an adopted LeaderWorkerSet carries that no typed attribute says —
// the template fields the generated configuration carries in pod_template,
// and the fields it cannot express at all (the object's own labels, a
// subgroup policy, …), which an apply leaves to the manager that set them.

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
	templates := func(p string) bool {
		return p == "spec.leaderWorkerTemplate.leaderTemplate" || p == "spec.leaderWorkerTemplate.workerTemplate"
	}
	for _, p := range object.Uncovered(object.Settable(live), written, templates) {
		if !lwsDefault(p, live) {
			lost = append(lost, p)
		}
	}
	sort.Strings(lost)
	return carried, lost
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
