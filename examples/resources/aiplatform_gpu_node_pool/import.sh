# A pool imports by its name: the provider finds it through the annotation
# gpu-node-pool.aiplatform.terraform.io/<name> it left on the pool's nodes.
terraform import aiplatform_gpu_node_pool.h100 h100
