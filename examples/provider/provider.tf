terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

# The same connection attributes as the hashicorp/kubernetes provider v2.
# A kubeconfig is read only when named (config_path(s), KUBE_CONFIG_PATH(S));
# with nothing set: in-cluster configuration when running in a pod, else no
# cluster (data.aiplatform_inference_sizing still works).
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
