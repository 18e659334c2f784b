# A ClusterQueue is cluster-scoped: import it by name.
terraform import aiplatform_cluster_queue.research research
