# A Queue is cluster-scoped: import it by name.
terraform import aiplatform_volcano_queue.research research
