# A preset is namespaced: import it by namespace/name. The sizing block comes
# back from its aiplatform.io/model-sizing annotation, the probes and GPUs from
# its main container.
terraform import aiplatform_llm_service_preset.llama_70b default/llama-70b-h100
