package helm

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// kueueVolcano: Kueue's pod-based integrations (pod, deployment,
// statefulset) make its mutating webhook take every Pod created without the
// kueue.x-k8s.io/queue-name label: it gates the Pod until Kueue admits it and
// rewrites its schedulerName. Volcano's pods carry no such label, so with
// both installed Volcano silently stops scheduling. manageJobsWithoutQueueName
// does the same to every Job without the label. Job-level integrations
// (batch/job, trainer.kubeflow.org/trainjob, …) only touch their own kinds,
// and only with the label, so they coexist with Volcano.
var kueueVolcano = Rule{
	Charts: []string{Kueue.Product, Volcano.Product},
	Check: func(ctx context.Context, c *kube.Client, in Install, planned []Install) (*Conflict, error) {
		var detail string
		var err error
		if in.Chart == Kueue.Product {
			detail, err = kueueBesideVolcano(ctx, c, in, planned)
		} else {
			detail, err = volcanoBesideKueue(ctx, c, planned)
		}
		if detail == "" || err != nil {
			return nil, err
		}
		return &Conflict{Summary: "Kueue's configuration conflicts with Volcano", Detail: detail}, nil
	},
}

// kueueBesideVolcano judges a planned Kueue by the Volcano planned in this
// run and present in the cluster.
func kueueBesideVolcano(ctx context.Context, c *kube.Client, in Install, planned []Install) (string, error) {
	cfg, _ := in.Config.(KueueConfig)
	if !cfg.TakesUnlabelled() {
		return "", nil
	}
	var evidence []string
	for _, v := range ofChart(planned, Volcano.Product) {
		evidence = append(evidence, fmt.Sprintf("aiplatform_volcano (release %s) is planned in this configuration for the same cluster", v.ID()))
	}
	live, err := LiveVolcano(ctx, c)
	if err != nil {
		return "", err
	}
	evidence = append(evidence, live...)
	if len(evidence) == 0 {
		return "", nil
	}
	return kueueProblem(cfg, evidence), nil
}

func kueueProblem(cfg KueueConfig, evidence []string) string {
	var what []string
	if pb := cfg.PodBased(); len(pb) > 0 {
		what = append(what, fmt.Sprintf("integrations %s make Kueue's webhook take every Pod created without the "+
			"kueue.x-k8s.io/queue-name label (it gates the Pod until Kueue admits it and overwrites its schedulerName)", hcl(pb)))
	}
	if cfg.ManageJobsWithoutQueueName {
		what = append(what, "manage_jobs_without_queue_name = true makes Kueue suspend every Job of its integrations that has no queue-name label")
	}
	return fmt.Sprintf("Volcano is present:\n  - %s\n\nIn this Kueue, %s. Volcano's pods and jobs carry no such label, so Volcano would silently stop scheduling.\n\n"+
		"Fix: set integrations = %s and manage_jobs_without_queue_name = false in this aiplatform_kueue "+
		"(job-level frameworks such as \"batch/job\" and \"trainer.kubeflow.org/trainjob\" coexist with Volcano), or remove Volcano first.",
		strings.Join(evidence, "\n  - "), strings.Join(what, "; "), hcl(cfg.JobFrameworks()))
}

// volcanoBesideKueue judges a planned Volcano by the Kueue configurations
// planned in this run and live in the cluster. A live Kueue whose release is
// planned in this run is judged by its plan.
func volcanoBesideKueue(ctx context.Context, c *kube.Client, planned []Install) (string, error) {
	plannedKueue := ofChart(planned, Kueue.Product)
	type finding struct {
		where string
		cfg   KueueConfig
	}
	var found []finding
	live, err := LiveKueue(ctx, c)
	if err != nil {
		return "", err
	}
	for _, k := range live {
		if isPlanned(plannedKueue, k.ID()) {
			continue // judged by its plan below
		}
		if cfg, _ := k.Config.(KueueConfig); cfg.TakesUnlabelled() {
			found = append(found, finding{fmt.Sprintf("the Kueue in namespace %s (%s)", k.Namespace, k.Found), cfg})
		}
	}
	for _, k := range plannedKueue {
		if cfg, _ := k.Config.(KueueConfig); cfg.TakesUnlabelled() {
			found = append(found, finding{fmt.Sprintf("aiplatform_kueue (release %s) planned in this configuration", k.ID()), cfg})
		}
	}
	if len(found) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("Kueue is configured to take pods and jobs that Volcano must schedule:\n")
	for _, f := range found {
		var what []string
		if pb := f.cfg.PodBased(); len(pb) > 0 {
			what = append(what, fmt.Sprintf("integrations.frameworks includes %s", strings.Join(pb, ", ")))
		}
		if f.cfg.ManageJobsWithoutQueueName {
			what = append(what, "manageJobsWithoutQueueName is true")
		}
		fmt.Fprintf(&b, "  - %s: %s\n", f.where, strings.Join(what, "; "))
	}
	b.WriteString("\nKueue's pod-based integrations make its webhook take every Pod created without the kueue.x-k8s.io/queue-name " +
		"label (gated until Kueue admits it, schedulerName overwritten), and manageJobsWithoutQueueName suspends every Job without it. " +
		"Volcano's pods carry no such label, so Volcano would silently stop scheduling.\n\n")
	fmt.Fprintf(&b, "Fix: in aiplatform_kueue set integrations = %s and manage_jobs_without_queue_name = false "+
		"(or, for a Kueue installed otherwise, remove pod, deployment and statefulset from integrations.frameworks in its "+
		"configuration and set manageJobsWithoutQueueName: false), apply that, then add Volcano. In one configuration, give "+
		"aiplatform_volcano depends_on = [aiplatform_kueue.<name>] so that Kueue's new configuration is planned first.",
		hcl(found[0].cfg.JobFrameworks()))
	return b.String(), nil
}

func isPlanned(planned []Install, id string) bool {
	for _, p := range planned {
		if p.ID() == id {
			return true
		}
	}
	return false
}
