# A Helm release is imported by namespace/release.
terraform import aiplatform_trainer.this kubeflow-system/kubeflow-trainer
