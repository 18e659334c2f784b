# Before an upgrade that stops serving an old API version — Kueue 0.20 stops
# serving kueue.x-k8s.io/v1beta1, which a cluster that ever ran Kueue <= 0.15
# still lists in its CRDs' status.storedVersions — rewrite every Kueue object
# at its storage version (v1beta2) and trim those lists. The plan counts the
# objects per CRD; apply this first, then change aiplatform_kueue's version.
# (With the install in the same configuration, add
# depends_on = [aiplatform_kueue.<name>] so the CRDs are read after it.)
resource "aiplatform_storage_version_migration" "kueue" {
  group = "kueue.x-k8s.io"
}
