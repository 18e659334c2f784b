# A checkpoint store is namespaced: import it by namespace/name. Its claim (or,
# for an object store, its ConfigMap) carries the label
# checkpoint-store.aiplatform.terraform.io/name and the recorded settings.
terraform import aiplatform_checkpoint_store.llama training/llama-70b-ckpt
