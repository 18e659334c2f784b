# A LeaderWorkerSet is namespaced: import it by namespace/name. The serving
# block comes back from the object's annotation. Containers keep their live
# names; what no typed attribute says goes in pod_template, and the import
# warns with the paths of anything the configuration cannot carry. With an
# import block, `terraform plan -generate-config-out=generated.tf` writes
# the configuration that reproduces the object.
terraform import aiplatform_lws_group.deepseek default/deepseek-v3
