# The ID is the API group, or crds: and CRD names joined by commas. An import
# rewrites nothing; the next plan shows whatever is still to migrate.
terraform import aiplatform_storage_version_migration.kueue kueue.x-k8s.io
