# A Volcano queue for the research team: up to 16 GPUs, 8 of them its
# deserved share when the cluster is contended, under the root queue.
resource "aiplatform_volcano_queue" "research" {
  name        = "research"
  weight      = 2
  parent      = "root"
  reclaimable = true
  capability  = { "nvidia.com/gpu" = "16", cpu = "128", memory = "1Ti" }
  deserved    = { "nvidia.com/gpu" = "8" }
  guarantee   = { cpu = "16" }
}
