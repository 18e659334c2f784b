# A LeaderWorkerSet is namespaced: import it by namespace/name. The serving
# block comes back from the object's annotation.
terraform import aiplatform_lws_group.deepseek default/deepseek-v3
