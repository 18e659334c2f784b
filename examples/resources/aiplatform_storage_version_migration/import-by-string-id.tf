# Terraform >= 1.5 and OpenTofu >= 1.5: the same import as a block, planned with
# the rest of the configuration.
import {
  to = aiplatform_storage_version_migration.kueue
  id = "kueue.x-k8s.io"
}
