// Package training holds the resources of distributed training, one file
// (or one file per verb) each:
//
//   - aiplatform_training_runtime (training_runtime*.go): a Kubeflow Trainer
//     ClusterTrainingRuntime or TrainingRuntime with a typed framework policy,
//     a gang through Kueue or a PodGroup, a checkpoint mount and bounded
//     restarts; its nodes and gang are checked at plan by internal/rules
//     against the pool, the queue and Kueue as this run plans them;
//   - aiplatform_checkpoint_store (checkpoint_store*.go): storage for
//     checkpoints that outlives the jobs writing them — a ReadWriteMany claim
//     kept by destroy, or an object-store location published in a ConfigMap —
//     with an optional backup CronJob;
//   - aiplatform_nccl_check (nccl_check*.go): nccl-tests across a pool's nodes
//     through an MPIJob, and the bus-bandwidth verdict (internal/fabric).
package training
