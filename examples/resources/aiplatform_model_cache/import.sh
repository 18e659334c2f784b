# A model cache is namespaced: import it by namespace/name. The configuration
# comes back from the annotations on its claim (or DaemonSet).
terraform import aiplatform_model_cache.llama default/llama-3-8b
