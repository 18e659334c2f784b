# A ProvisioningRequestConfig is cluster-scoped: import it by name.
terraform import aiplatform_provisioning_request_config.atomic atomic-scale-up
