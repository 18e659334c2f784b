# A Helm release is imported by namespace/release.
terraform import aiplatform_kueue.this kueue-system/kueue
