# A Helm release is imported by namespace/release.
terraform import aiplatform_jobset_controller.this jobset-system/jobset
