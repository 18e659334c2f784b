# An MPI Operator installed by this provider, by its namespace.
terraform import aiplatform_mpi_operator.this mpi-operator
