# Queues join the cohort with cohort = "platform"; the Cohort object itself
# adds a place in a tree of cohorts and a fair-sharing weight.
resource "aiplatform_cohort" "platform" {
  name         = "platform"
  fair_sharing = { weight = "2" }
}
