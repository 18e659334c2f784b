package helm

import (
	"context"
	"fmt"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// JobSet is the JobSet controller's chart (catalog.JobSet). Its settings are
// the user's values alone: no typed configuration.
var JobSet = chartOf(catalog.JobSet)

// JobSet's presence in a cluster.
var jobSetKind = catalog.JobSetKind

const (
	// jobSetDeployment is the controller's Deployment of JobSet's kustomize
	// manifests; the chart's is <fullname>-controller, found by its labels.
	jobSetDeployment = "jobset-controller-manager"
	jobSetLabels     = "app.kubernetes.io/name=jobset,app.kubernetes.io/component=controller"
)

// JobSetServed tells whether the cluster serves the JobSet API
// (jobsets.jobset.x-k8s.io, v1alpha2).
func JobSetServed(ctx context.Context, c *kube.Client) (bool, error) {
	return c.Served(ctx, jobSetKind)
}

// LiveJobSet finds the JobSet controllers in the cluster by their
// Deployments, whoever installed them: as a release of JobSet's chart (its
// own, or the subchart of Kubeflow Trainer's chart, then the release is the
// Trainer's), or from the kustomize manifests (release name "" ).
func LiveJobSet(ctx context.Context, c *kube.Client) ([]Install, error) {
	return liveDeployments(ctx, c, JobSet.Product, jobSetDeployment, jobSetLabels)
}

// liveDeployments describes each Deployment of that name (in any namespace)
// or with those labels as an Install of product: the Helm release that owns
// it (its meta.helm.sh annotations), or the Deployment's own name when no
// release does.
func liveDeployments(ctx context.Context, c *kube.Client, product, name, labels string) ([]Install, error) {
	deps, err := c.DeploymentsNamed(ctx, name, labels)
	if err != nil {
		return nil, err
	}
	out := make([]Install, 0, len(deps))
	for _, d := range deps {
		in := Install{Chart: product, Namespace: d.Namespace, Name: d.Name, Found: fmt.Sprintf("Deployment %s/%s", d.Namespace, d.Name)}
		if rel := d.Annotations[releaseNameAnnotation]; rel != "" {
			in.Name = rel
			if ns := d.Annotations[releaseNamespaceAnnotation]; ns != "" {
				in.Namespace = ns
			}
			in.Found += fmt.Sprintf(", Helm release %s/%s", in.Namespace, in.Name)
		}
		out = append(out, in)
	}
	return out, nil
}
