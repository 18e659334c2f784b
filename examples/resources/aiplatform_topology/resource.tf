# Topology-aware scheduling: the node labels that say where a GPU node sits,
# widest domain first. A job annotated with
#   kueue.x-k8s.io/podset-required-topology: cloud.example.com/block
# is placed on nodes of one block, e.g. a 16-GPU job on two whole 8-GPU nodes
# behind the same switch.
resource "aiplatform_topology" "datacenter" {
  name = "datacenter"
  levels = [
    "cloud.example.com/block",
    "cloud.example.com/rack",
    "kubernetes.io/hostname", # only ever the last level
  ]
}

# The flavor of the pool names the topology. The plan warns about nodes of the
# pool that lack one of the level labels: Kueue cannot place workloads on them.
resource "aiplatform_resource_flavor" "h100_tas" {
  name          = "h100-tas"
  node_labels   = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  topology_name = aiplatform_topology.datacenter.name
}
