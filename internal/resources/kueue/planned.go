package kueue

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// What the queues and flavors record in the run's plan registry
// (internal/planned) for the checks across resources (internal/rules), and
// what those checks find when they are planned.

// planClusterQueue derives the quotas, then records the queue's quota.
func planClusterQueue(ctx context.Context, c *kube.Client, m *clusterQueueModel) diag.Diagnostics {
	diags := planQuotas(ctx, c, m.ResourceGroups)
	if diags.HasError() || !object.Known(m.Name) {
		return diags
	}
	diags.Append(rules.Plan(ctx, c, clusterQueueFact(m))...)
	return diags
}

func clusterQueueFact(m *clusterQueueModel) planned.ClusterQueue {
	q := planned.ClusterQueue{Name: m.Name.ValueString(), QuotaKnown: true}
	// An unknown cohort may be one: borrowing then counts as unbounded,
	// which refuses nothing.
	q.Cohort = !m.Cohort.IsNull()
	if f := m.FlavorFungibility; f != nil {
		q.Fungible = f.WhenCanBorrow.ValueString() == "TryNextFlavor" || f.WhenCanPreempt.ValueString() == "TryNextFlavor"
	}
	for _, g := range m.ResourceGroups {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				if !object.Known(f.Name) || !object.Known(r.Name) || !object.Known(r.NominalQuota) || r.BorrowingLimit.IsUnknown() {
					q.QuotaKnown = false
					continue
				}
				quota := planned.Quota{Flavor: f.Name.ValueString(), Resource: r.Name.ValueString(), Nominal: whole(r.NominalQuota.ValueString())}
				switch {
				case !r.BorrowingLimit.IsNull():
					quota.Borrowing = whole(r.BorrowingLimit.ValueString())
				case q.Cohort:
					quota.Borrowing = -1
				}
				q.Quota = append(q.Quota, quota)
			}
		}
	}
	return q
}

// whole reads a quota as a whole count (GPUs); 0 when it does not parse,
// which the attribute's validator refuses first.
func whole(s string) int64 {
	q, err := validators.ParseQuantity(s)
	if err != nil {
		return 0
	}
	return q.Value()
}

func planLocalQueue(ctx context.Context, c *kube.Client, m *localQueueModel) diag.Diagnostics {
	if !object.Known(m.Namespace) || !object.Known(m.Name) || !object.Known(m.ClusterQueue) {
		return nil
	}
	return rules.Plan(ctx, c, planned.LocalQueue{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString(), ClusterQueue: m.ClusterQueue.ValueString()})
}

func resourceFlavorFact(m *resourceFlavorModel) planned.ResourceFlavor {
	f := planned.ResourceFlavor{Name: m.Name.ValueString(), LabelsKnown: !m.NodeLabels.IsUnknown()}
	if f.LabelsKnown {
		f.NodeLabels = object.Labels(m.NodeLabels)
	}
	return f
}
