# A Topology is cluster-scoped: import it by name.
terraform import aiplatform_topology.datacenter datacenter
