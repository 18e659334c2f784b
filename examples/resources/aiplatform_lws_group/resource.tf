# DeepSeek-V3 (671B parameters in fp8, 671 GB) on H100 nodes: one replica is
# a group of 2 pods × 8 GPUs on 2 nodes — the leader runs the vLLM API
# server, the worker joins its Ray cluster — sharded 16 ways. The plan
# checks 671 GB ÷ 16 = 41.94 GB per GPU against the GPUs' memory, read from
# the nodes' nvidia.com/gpu.memory label (81559 MiB ≈ 85.5 GB, 76.97 GB after
# the 10% reserve), and that each pod's 8 GPUs fit one node of the pool.
# The leader's model server (its first container) gets a startup probe that
# allows ⌈(671e9 B ÷ 200 MiB/s + 60 s) × 2 ÷ 10 s⌉ = 652 failed checks
# (about 1 h 49 min) to read the weights, then a liveness probe on /health
# (every 10 s, 3 failures; Kubernetes starts it only once the startup probe
# has passed) and a readiness probe on /v1/models. The worker (a Ray worker,
# no HTTP server) gets no probes.
#
# Production pods carry more than one container: the token comes from a
# Secret, NCCL gets a shared-memory volume, requests sit below limits, and a
# metrics sidecar runs beside the leader's server. (For a pod of one
# container, `image`, `gpus`, `cpu` and `memory` are a shorthand.)
locals {
  h100 = {
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }
  vllm = {
    image = "vllm/vllm-openai:v0.9.0"
    env = [
      # optional: the pods start without the Secret (public weights).
      { name = "HF_TOKEN", value_from = { secret_key_ref = { name = "hf-token", key = "token", optional = true } } },
      { name = "NCCL_DEBUG", value = "WARN" },
    ]
    requests      = { cpu = "32", memory = "512Gi", "nvidia.com/gpu" = "8" }
    limits        = { cpu = "48", memory = "640Gi", "nvidia.com/gpu" = "8" }
    volume_mounts = [{ name = "dshm", mount_path = "/dev/shm" }]
  }
  dshm = [{ name = "dshm", empty_dir = { medium = "Memory", size_limit = "64Gi" } }]
}

resource "aiplatform_lws_group" "deepseek" {
  name      = "deepseek-v3"
  namespace = "default"
  replicas  = 1
  size      = 2

  leader = merge(local.h100, {
    labels = { "app.kubernetes.io/component" = "leader" }
    containers = [
      merge(local.vllm, {
        name = "vllm"
        command = ["sh", "-c", join(" ", [
          "ray start --head --port=6379 &&",
          "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --pipeline-parallel-size 2",
        ])]
        ports = [{ name = "http", container_port = 8000 }]
      }),
      {
        # Sidecar: turns the server's /metrics into the format the
        # cluster's collector scrapes.
        name     = "metrics-exporter"
        image    = "busybox:1.36"
        args     = ["sh", "-c", "while true; do wget -qO- http://127.0.0.1:8000/metrics >/dev/null; sleep 15; done"]
        requests = { cpu = "50m", memory = "32Mi" }
        limits   = { cpu = "100m", memory = "64Mi" }
      },
    ]
    volumes = local.dshm
  })
  worker = merge(local.h100, {
    containers = [merge(local.vllm, {
      name    = "vllm"
      command = ["sh", "-c", "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
    })]
    volumes = local.dshm
  })

  serving = {
    params_billion             = 671
    dtype                      = "fp8"
    kv_cache_bytes_per_request = 4000000000 # ~ 4 GB for a long context
    # gpu_memory: from the pool's nvidia.com/gpu.memory label
    # tensor_parallel: every GPU of the group (16)
  }
}

output "deepseek_capacity" {
  value = {
    gpus_total      = aiplatform_lws_group.deepseek.gpus_total      # 16
    max_concurrency = aiplatform_lws_group.deepseek.max_concurrency # requests held at once
  }
}
