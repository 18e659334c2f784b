# Llama 3.1 8B from Hugging Face into a shared ReadWriteMany claim, filled once
# by a warm-up Job; every replica mounts it read-only (claim_name, sub_path,
# mount_path). Changing revision fetches the new one beside the old, in place.
resource "aiplatform_model_cache" "llama" {
  name      = "llama-3-8b"
  namespace = "default"
  source = {
    uri      = "hf://meta-llama/Llama-3.1-8B-Instruct"
    revision = "main" # pin a commit for identical replicas
    # A Secret with the key HF_TOKEN, for gated models:
    # secret_ref = { name = "hf-token" }
  }
  size    = "40Gi" # two revisions of 16 GB
  timeout = "30m"
}

output "llama_mount" {
  value = {
    claim_name = aiplatform_model_cache.llama.claim_name
    sub_path   = aiplatform_model_cache.llama.sub_path
    mount_path = aiplatform_model_cache.llama.mount_path
  }
}
