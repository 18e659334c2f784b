# A Helm release is imported by namespace/release.
terraform import aiplatform_lws_controller.this lws-system/lws
