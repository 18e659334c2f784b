# A LocalQueue is namespaced: import it by namespace/name.
terraform import aiplatform_local_queue.research default/research
