# A RayCluster is imported by namespace/name.
terraform import aiplatform_ray_cluster.tune default/tune
