package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// MPIOperator is Kubeflow's MPI Operator, installed from its release
// manifest (deploy/v2beta1/mpi-operator.yaml of the module), not a chart.
var MPIOperator = Product{
	Name:           "MPI Operator",
	Module:         "github.com/kubeflow/mpi-operator",
	DefaultVersion: "v0.8.2",
	Namespace:      "mpi-operator",
	Serves:         "kubeflow.org/v2beta1",
}

// MPIOperatorManifest is the release manifest's path in the module and in
// the project's GitHub releases.
const MPIOperatorManifest = "deploy/v2beta1/mpi-operator.yaml"

// MPIJobKind is the MPI Operator's MPIJob (v0.8.0 serves kubeflow.org/v2beta1).
var MPIJobKind = kube.Kind{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs", Kind: "MPIJob", Namespaced: true,
	Missing: "the MPI Operator is not installed in this cluster (aiplatform_nccl_check runs nccl-tests as a kubeflow.org/v2beta1 MPIJob): install MPI Operator v0.8.0 or later"}
