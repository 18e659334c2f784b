# Checkpoints of a multi-node training run: a ReadWriteMany claim every node
# mounts at /checkpoints, kept when the store is destroyed, backed up every
# six hours into a backup claim that keeps the newest four copies.
resource "aiplatform_checkpoint_store" "llama" {
  name      = "llama-70b-ckpt"
  namespace = "training"
  size      = "2Ti"
  # storage_class = "filestore-rwx"   # default: the cluster's default class

  labels = { team = "llm" }

  backup = {
    schedule  = "0 */6 * * *"
    retention = 4
  }
}

# The same checkpoints in a bucket: only the location and the names of the
# Secret's keys are recorded (in a ConfigMap runtimes use with envFrom).
resource "aiplatform_checkpoint_store" "bucket" {
  name      = "llama-70b-s3"
  namespace = "training"
  kind      = "object_store"
  uri       = "s3://checkpoints/llama-70b"
  endpoint  = "https://minio.storage.svc:9000"

  credentials_secret = {
    name = "s3-checkpoints"
    keys = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
  }
}

# A runtime consumes:
#   aiplatform_checkpoint_store.llama.claim_name  -> the volume's claimName
#   aiplatform_checkpoint_store.llama.mount_path  -> the volumeMount's mountPath
#   aiplatform_checkpoint_store.llama.env         -> { CHECKPOINT_DIR = "/checkpoints" }
