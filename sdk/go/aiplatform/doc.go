// A shared GPU platform on Kubernetes: Kueue quotas that follow the GPUs the nodes have, training and serving controllers, checkpoint stores and plan-time checks
package aiplatform
