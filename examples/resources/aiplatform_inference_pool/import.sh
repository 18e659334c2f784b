# An inference pool is namespaced: import it by namespace/name. The picker's
# attributes come back from its Deployment (<name>-epp); serving_group is
# only a plan-time check and is not read back.
terraform import aiplatform_inference_pool.llama default/llama-8b
