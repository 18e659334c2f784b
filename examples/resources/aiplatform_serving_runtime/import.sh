# A ClusterServingRuntime is imported by name, a namespaced ServingRuntime by
# namespace/name. The model block comes back from the runtime's
# aiplatform.io/model-sizing annotation, the probes and GPUs from its managed
# container; the import warns about fields no attribute expresses.
terraform import aiplatform_serving_runtime.vllm vllm-llama-8b
