# Users submit Jobs with the label kueue.x-k8s.io/queue-name: research.
resource "aiplatform_local_queue" "research" {
  name          = "research"
  namespace     = "default"
  cluster_queue = "research"
}
