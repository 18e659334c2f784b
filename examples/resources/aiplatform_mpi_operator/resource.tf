# The MPI Operator v0.8.2 from its release's manifest file (downloaded from
# GitHub; offline, set manifests = { path = "…/deploy/v2beta1/mpi-operator.yaml" }).
# MPIJobs (kubeflow.org/v2beta1) then get a launcher and workers; the CRD stays
# on destroy unless remove_crds = true.
resource "aiplatform_mpi_operator" "this" {
  version = "v0.8.2"
}
