# A Helm release is imported by namespace/release.
terraform import aiplatform_volcano.this volcano-system/volcano
