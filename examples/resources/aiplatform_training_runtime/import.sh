# A ClusterTrainingRuntime imports by name, a namespaced TrainingRuntime by
# namespace/name (Trainer's published runtimes, e.g. torch-distributed, too).
terraform import aiplatform_training_runtime.torch torch-h100
terraform import aiplatform_training_runtime.deepspeed training/deepspeed-a100
