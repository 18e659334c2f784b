package helm

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// oneKServe: one KServe per cluster. Its webhook configurations
// (inferenceservice.serving.kserve.io, servingruntime.serving.kserve.io, …),
// ClusterRoles and CRDs are cluster-wide objects with fixed names, so Helm
// refuses a second release that renders them, and two managers would both
// reconcile every InferenceService.
var oneKServe = Rule{
	Charts: []string{KServe.Product},
	Check: func(ctx context.Context, c *kube.Client, in Install, planned []Install) (*Conflict, error) {
		var evidence []string
		for _, p := range ofChart(planned, KServe.Product) {
			evidence = append(evidence, "aiplatform_kserve "+p.ID()+" is planned in this configuration")
		}
		live, err := LiveKServe(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, l := range live {
			if l.ID() == in.ID() || isPlanned(planned, l.ID()) || l.ID() == in.Replaces {
				continue
			}
			evidence = append(evidence, "a KServe controller runs in the cluster ("+l.Found+")")
		}
		if len(evidence) == 0 {
			return nil, nil
		}
		return &Conflict{
			Summary: "A second KServe",
			Detail: fmt.Sprintf("aiplatform_kserve %s would install KServe, but KServe is already there:\n  - %s\n\n"+
				"KServe's CRDs, ClusterRoles and webhook configurations (inferenceservice.serving.kserve.io and the others) are "+
				"cluster-wide objects with fixed names: Helm refuses a second release that renders them, and two managers would both "+
				"reconcile every InferenceService.\n\nFix: keep one aiplatform_kserve (import the existing release with its "+
				"namespace/name), or remove the other KServe first.", in.ID(), strings.Join(evidence, "\n  - ")),
		}, nil
	},
}

// kserveKnativeMode: deployment mode Knative needs Knative Serving. KServe
// v0.20's InferenceService reconciler ends every InferenceService whose
// resolved mode is Knative with a terminal error ("the resolved deployment
// mode of InferenceService … is Knative, but Knative Serving is not
// available") when serving.knative.dev/v1 Services are not served; the chart's
// own default mode is Knative, so an install with defaults in a cluster
// without Knative runs and serves nothing.
var kserveKnativeMode = Rule{
	Charts: []string{KServe.Product},
	Check: func(ctx context.Context, c *kube.Client, in Install, _ []Install) (*Conflict, error) {
		cfg, err := kserveConfigOf(in)
		if err != nil || cfg.DeploymentMode != "Knative" {
			return nil, nil
		}
		served, err := KnativeServingServed(ctx, c)
		if err != nil || served {
			return nil, err
		}
		return &Conflict{
			Summary: "KServe's Knative mode without Knative Serving",
			Detail: fmt.Sprintf("aiplatform_kserve %s sets deployment_mode = \"Knative\", but the cluster does not serve Knative Serving "+
				"(serving.knative.dev/v1 Services). KServe v0.20 fails every InferenceService in Knative mode with \"Knative Serving is "+
				"not available\".\n\nFix: set deployment_mode = \"Standard\" (Deployments, Services and HPAs; no Knative or Istio "+
				"needed), or install Knative Serving first and make this resource depend on it.", in.ID()),
		}, nil
	},
}
