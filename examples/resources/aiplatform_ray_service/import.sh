# A RayService is imported by namespace/name.
terraform import aiplatform_ray_service.llm default/llm
