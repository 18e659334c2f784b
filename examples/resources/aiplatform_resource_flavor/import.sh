# A ResourceFlavor is cluster-scoped: import it by name.
terraform import aiplatform_resource_flavor.h100 h100
