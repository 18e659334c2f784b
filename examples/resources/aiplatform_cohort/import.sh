# A Cohort is cluster-scoped: import it by name.
terraform import aiplatform_cohort.platform platform
