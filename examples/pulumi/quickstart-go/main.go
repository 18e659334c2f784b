// The classic Kueue walkthrough on a GPU cluster (examples/pulumi/quickstart
// in Go): one flavor, a ClusterQueue that admits one GPU's worth of work at
// a time, and a LocalQueue users submit to from the default namespace.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/aiplatform/terraform-provider-aiplatform/sdk/go/aiplatform"
	"github.com/aiplatform/terraform-provider-aiplatform/sdk/go/aiplatform/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		flavor, err := aiplatform.NewResourceFlavor(ctx, "gpu", &aiplatform.ResourceFlavorArgs{
			Name: pulumi.String("default-flavor"),
		})
		if err != nil {
			return err
		}
		quota := func(name, amount string) aiplatform.ClusterQueueResourceGroupFlavorResourceInput {
			return aiplatform.ClusterQueueResourceGroupFlavorResourceArgs{Name: pulumi.String(name), NominalQuota: pulumi.String(amount)}
		}
		queue, err := aiplatform.NewClusterQueue(ctx, "clusterQueue", &aiplatform.ClusterQueueArgs{
			Name: pulumi.String("cluster-queue"),
			ResourceGroups: aiplatform.ClusterQueueResourceGroupArray{aiplatform.ClusterQueueResourceGroupArgs{
				CoveredResources: pulumi.StringArray{pulumi.String("cpu"), pulumi.String("memory"), pulumi.String("nvidia.com/gpu")},
				Flavors: aiplatform.ClusterQueueResourceGroupFlavorArray{aiplatform.ClusterQueueResourceGroupFlavorArgs{
					Name: flavor.Name,
					Resources: aiplatform.ClusterQueueResourceGroupFlavorResourceArray{
						quota("cpu", "9"), quota("memory", "36Gi"), quota("nvidia.com/gpu", "1"),
					},
				}},
			}},
		})
		if err != nil {
			return err
		}
		local, err := aiplatform.NewLocalQueue(ctx, "localQueue", &aiplatform.LocalQueueArgs{
			Name:         pulumi.String("gpu-local-queue"),
			Namespace:    pulumi.String("default"),
			ClusterQueue: queue.Name,
		})
		if err != nil {
			return err
		}
		// Label your Jobs with kueue.x-k8s.io/queue-name = this.
		ctx.Export("localQueue", local.Name)
		// The cluster it went to: the provider's aiplatform:configPath.
		ctx.Export("kubeconfig", pulumi.String(config.GetConfigPath(ctx)))
		return nil
	})
}
