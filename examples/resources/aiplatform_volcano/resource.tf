# Volcano from its upstream chart repository, with the scheduler's actions
# and plugin tiers as typed attributes. The plan fails if the cluster's Kueue
# manages plain pods (integration pod, deployment or statefulset) or jobs
# without a queue name: Kueue would take Volcano's pods.
resource "aiplatform_volcano" "this" {
  version = "1.13.0"

  actions = ["enqueue", "allocate", "backfill"]
  plugin_tiers = [
    ["priority", "gang", "conformance"],
    ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
  ]
}
