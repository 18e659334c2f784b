# A model deployment is namespaced: import it by namespace/name. The model
# block comes back from the Deployment's aiplatform.io/model-sizing
# annotation, the probes and GPUs from its managed container.
terraform import aiplatform_model_deployment.llama default/llama-8b
