# A MultiKueueConfig is cluster-scoped: import it by name.
terraform import aiplatform_multikueue_config.workers gpu-workers
