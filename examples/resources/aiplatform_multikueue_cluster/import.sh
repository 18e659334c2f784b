# A MultiKueueCluster is cluster-scoped: import it by name. The kubeconfig
# stays in its Secret; state records only its SHA-256.
terraform import aiplatform_multikueue_cluster.eu_1 worker-eu-1
