# A KServe install is imported by the namespace/release of its resources chart.
terraform import aiplatform_kserve.this kserve/kserve
