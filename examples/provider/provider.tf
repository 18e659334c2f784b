terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

# The same connection attributes as the hashicorp/kubernetes provider.
# With none set: in-cluster configuration, then $KUBECONFIG / ~/.kube/config.
provider "aiplatform" {
  config_path    = "~/.kube/config"
  config_context = "gpu-cluster"
}

# Or, for example on EKS:
# provider "aiplatform" {
#   host                   = data.aws_eks_cluster.this.endpoint
#   cluster_ca_certificate = base64decode(data.aws_eks_cluster.this.certificate_authority[0].data)
#   exec {
#     api_version = "client.authentication.k8s.io/v1beta1"
#     command     = "aws"
#     args        = ["eks", "get-token", "--cluster-name", "gpu-cluster"]
#   }
# }
