package helm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Conflict rules between Kueue and Volcano.
//
// Kueue's pod-based integrations (pod, deployment, statefulset) make its
// mutating webhook take every Pod created without the
// kueue.x-k8s.io/queue-name label: it gates the Pod until Kueue admits it and
// rewrites its schedulerName. Volcano's pods carry no such label, so with
// both installed Volcano silently stops scheduling. manageJobsWithoutQueueName
// does the same to every Job without the label. Job-level integrations
// (batch/job, trainer.kubeflow.org/trainjob, …) only touch their own kinds,
// and only with the label, so they coexist with Volcano.
//
// The rules run at plan time against the live cluster and against the other
// installs planned in the same run: Terraform plans every resource of one
// provider configuration in one provider process, which sees each plan
// through a registry keyed by the run's client. Whichever of the two
// resources is planned second fails. They run again at apply time against the
// live cluster, for plans made before the cluster changed.

// PodBasedFrameworks are the Kueue integrations that intercept plain Pods.
var PodBasedFrameworks = []string{"pod", "deployment", "statefulset"}

// Volcano's presence in a cluster.
const (
	VolcanoCRD        = "podgroups.scheduling.volcano.sh"
	VolcanoScheduler  = "volcano-scheduler"
	kueueConfigMap    = "kueue-manager-config"
	kueueConfigKey    = "controller_manager_config.yaml"
	kueueLabel        = "app.kubernetes.io/name=kueue"
	volcanoSchedLabel = "app=volcano-scheduler"
)

// KueuePlan is an aiplatform_kueue as planned.
type KueuePlan struct {
	Namespace, Name            string
	Frameworks                 []string
	ManageJobsWithoutQueueName bool
}

// PodBased lists the plan's pod-based frameworks.
func (p KueuePlan) PodBased() []string { return podBased(p.Frameworks) }

// Unsafe says whether this Kueue breaks Volcano.
func (p KueuePlan) Unsafe() bool { return len(p.PodBased()) > 0 || p.ManageJobsWithoutQueueName }

func podBased(frameworks []string) []string {
	var out []string
	for _, f := range frameworks {
		if slices.Contains(PodBasedFrameworks, f) {
			out = append(out, f)
		}
	}
	return out
}

// jobFrameworks are the frameworks minus the pod-based ones (batch/job when
// nothing is left), as the fix to suggest.
func jobFrameworks(frameworks []string) []string {
	var out []string
	for _, f := range frameworks {
		if !slices.Contains(PodBasedFrameworks, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []string{"batch/job"}
	}
	return out
}

func hcl(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// run is what one provider run (one configured client) has planned.
type run struct {
	mu      sync.Mutex
	kueue   map[string]KueuePlan // namespace/name → plan
	volcano map[string]bool      // namespace/name
}

var runs sync.Map // *kube.Client → *run

func runOf(c *kube.Client) *run {
	v, _ := runs.LoadOrStore(c, &run{kueue: map[string]KueuePlan{}, volcano: map[string]bool{}})
	return v.(*run)
}

// CheckKueue returns a problem (empty when none) for installing Kueue as
// planned, looking at Volcano planned in this run and present in the
// cluster, and records the plan for the other side's check.
func CheckKueue(ctx context.Context, c *kube.Client, p KueuePlan) (string, error) {
	rn := runOf(c)
	rn.mu.Lock()
	rn.kueue[p.Namespace+"/"+p.Name] = p
	var planned []string
	for id := range rn.volcano {
		planned = append(planned, id)
	}
	rn.mu.Unlock()
	if !p.Unsafe() {
		return "", nil
	}
	var evidence []string
	sort.Strings(planned)
	for _, id := range planned {
		evidence = append(evidence, fmt.Sprintf("aiplatform_volcano (release %s) is planned in this configuration for the same cluster", id))
	}
	live, err := LiveVolcano(ctx, c)
	if err != nil {
		return "", err
	}
	evidence = append(evidence, live...)
	if len(evidence) == 0 {
		return "", nil
	}
	return kueueProblem(p, evidence), nil
}

func kueueProblem(p KueuePlan, evidence []string) string {
	var what []string
	if pb := p.PodBased(); len(pb) > 0 {
		what = append(what, fmt.Sprintf("integrations %s make Kueue's webhook take every Pod created without the "+
			"kueue.x-k8s.io/queue-name label (it gates the Pod until Kueue admits it and overwrites its schedulerName)", hcl(pb)))
	}
	if p.ManageJobsWithoutQueueName {
		what = append(what, "manage_jobs_without_queue_name = true makes Kueue suspend every Job of its integrations that has no queue-name label")
	}
	return fmt.Sprintf("Volcano is present:\n  - %s\n\nIn this Kueue, %s. Volcano's pods and jobs carry no such label, so Volcano would silently stop scheduling.\n\n"+
		"Fix: set integrations = %s and manage_jobs_without_queue_name = false in this aiplatform_kueue "+
		"(job-level frameworks such as \"batch/job\" and \"trainer.kubeflow.org/trainjob\" coexist with Volcano), or remove Volcano first.",
		strings.Join(evidence, "\n  - "), strings.Join(what, "; "), hcl(jobFrameworks(p.Frameworks)))
}

// LiveVolcano describes the Volcano found in the cluster: its PodGroup CRD or
// a volcano-scheduler Deployment. Empty when there is none.
func LiveVolcano(ctx context.Context, c *kube.Client) ([]string, error) {
	var out []string
	deps, err := c.DeploymentsNamed(ctx, VolcanoScheduler, volcanoSchedLabel)
	if err != nil {
		return nil, err
	}
	for _, d := range deps {
		out = append(out, fmt.Sprintf("the cluster runs the Volcano scheduler (Deployment %s/%s)", d.Namespace, d.Name))
	}
	crd, err := c.CRD(ctx, VolcanoCRD)
	if err != nil {
		return nil, err
	}
	switch {
	case crd != nil && len(deps) > 0:
		out = append(out, fmt.Sprintf("the cluster has Volcano's CRD %s", VolcanoCRD))
	case crd != nil:
		out = append(out, fmt.Sprintf("the cluster has Volcano's CRD %s but no volcano-scheduler Deployment (a renamed "+
			"scheduler, or CRDs left behind by an uninstall: then delete the CRD, or destroy aiplatform_volcano with remove_crds = true)", VolcanoCRD))
	}
	return out, nil
}

// CheckVolcano returns a problem (empty when none) for installing Volcano,
// looking at the Kueue configurations planned in this run and live in the
// cluster, and records the plan for the other side's check. A live Kueue
// whose release is planned in this run is judged by its plan.
func CheckVolcano(ctx context.Context, c *kube.Client, namespace, name string) (string, error) {
	rn := runOf(c)
	rn.mu.Lock()
	rn.volcano[namespace+"/"+name] = true
	planned := map[string]KueuePlan{}
	for id, p := range rn.kueue {
		planned[id] = p
	}
	rn.mu.Unlock()

	type finding struct {
		where string
		plan  KueuePlan
	}
	var found []finding
	live, err := LiveKueue(ctx, c)
	if err != nil {
		return "", err
	}
	for _, k := range live {
		if _, ok := planned[k.Namespace+"/"+k.Name]; ok {
			continue // judged by its plan below
		}
		if k.Unsafe() {
			found = append(found, finding{fmt.Sprintf("the Kueue in namespace %s (ConfigMap %s)", k.Namespace, k.ConfigMap), k.KueuePlan})
		}
	}
	ids := make([]string, 0, len(planned))
	for id := range planned {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if p := planned[id]; p.Unsafe() {
			found = append(found, finding{fmt.Sprintf("aiplatform_kueue (release %s) planned in this configuration", id), p})
		}
	}
	if len(found) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("Kueue is configured to take pods and jobs that Volcano must schedule:\n")
	for _, f := range found {
		var what []string
		if pb := f.plan.PodBased(); len(pb) > 0 {
			what = append(what, fmt.Sprintf("integrations.frameworks includes %s", strings.Join(pb, ", ")))
		}
		if f.plan.ManageJobsWithoutQueueName {
			what = append(what, "manageJobsWithoutQueueName is true")
		}
		fmt.Fprintf(&b, "  - %s: %s\n", f.where, strings.Join(what, "; "))
	}
	b.WriteString("\nKueue's pod-based integrations make its webhook take every Pod created without the kueue.x-k8s.io/queue-name " +
		"label (gated until Kueue admits it, schedulerName overwritten), and manageJobsWithoutQueueName suspends every Job without it. " +
		"Volcano's pods carry no such label, so Volcano would silently stop scheduling.\n\n")
	f := found[0]
	fmt.Fprintf(&b, "Fix: in aiplatform_kueue set integrations = %s and manage_jobs_without_queue_name = false "+
		"(or, for a Kueue installed otherwise, remove pod, deployment and statefulset from integrations.frameworks in its "+
		"configuration and set manageJobsWithoutQueueName: false), apply that, then add Volcano. In one configuration, give "+
		"aiplatform_volcano depends_on = [aiplatform_kueue.<name>] so that Kueue's new configuration is planned first.",
		hcl(jobFrameworks(f.plan.Frameworks)))
	return b.String(), nil
}

// LiveKueueConfig is a Kueue manager configuration found in the cluster.
type LiveKueueConfig struct {
	KueuePlan
	ConfigMap string
}

// LiveKueue finds Kueue manager configurations in every namespace: the
// ConfigMap kueue-manager-config (any install method) and ConfigMaps of
// Kueue's chart under another release name.
func LiveKueue(ctx context.Context, c *kube.Client) ([]LiveKueueConfig, error) {
	cms, err := c.ConfigMapsNamed(ctx, kueueConfigMap, kueueLabel)
	if err != nil {
		return nil, err
	}
	var out []LiveKueueConfig
	for _, cm := range cms {
		doc, ok := cm.Data[kueueConfigKey]
		if !ok {
			continue
		}
		cfg, err := ParseKueueConfig(doc)
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(cm.Name, "-manager-config")
		if rel := cm.Annotations["meta.helm.sh/release-name"]; rel != "" {
			name = rel
		}
		out = append(out, LiveKueueConfig{
			KueuePlan: KueuePlan{Namespace: cm.Namespace, Name: name, Frameworks: cfg.Frameworks, ManageJobsWithoutQueueName: cfg.ManageJobsWithoutQueueName},
			ConfigMap: cm.Name,
		})
	}
	return out, nil
}
