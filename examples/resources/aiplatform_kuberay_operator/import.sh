# A Helm release is imported by namespace/release.
terraform import aiplatform_kuberay_operator.this kuberay-system/kuberay-operator
