# Terraform >= 1.5 and OpenTofu >= 1.5: the same import as a block, planned with
# the rest of the configuration (`terraform plan` shows it before anything is
# written; `-generate-config-out=generated.tf` writes a configuration for it).
import {
  to = aiplatform_kserve.this
  id = "kserve/kserve"
}
