package serving_test

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// The classic cases of issue #5 through Terraform: 70B in fp16 on 80 GB cards
// is 2 GPUs on one node; 671B in fp8 on 8 × 80 GB nodes is 2 nodes × 8 GPUs
// with a LeaderWorkerSet. And the shared tensor-parallel rule (issue #17):
// 6 GPUs when the heads allow it, no power of two.
func TestAccInferenceSizing(t *testing.T) {
	env := acctest.Env(t)
	ds := "data.aiplatform_inference_sizing."
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config: acctest.Provider(env) + `
data "aiplatform_inference_sizing" "llama70" {
  params_billion             = 70
  dtype                      = "fp16"
  gpu_memory                 = "80G"
  gpus_per_node              = 8
  kv_cache_bytes_per_request = 1000000000
}

data "aiplatform_inference_sizing" "deepseek" {
  params_billion = 671
  dtype          = "fp8"
  gpu_memory     = "80Gi"
  gpus_per_node  = 8
}

data "aiplatform_inference_sizing" "six" {
  model_bytes              = 400000000000
  gpu_memory               = "80G"
  gpus_per_node            = 8
  attention_heads          = 48
  kv_heads                 = 6
  kv_cache_bytes_per_token = 131072
  context_length           = 8192
  overhead_bytes_per_gpu   = 0
}

data "aiplatform_inference_sizing" "bytes" {
  model_bytes      = 16000000000
  gpu_memory       = "24G"
  gpus_per_node    = 4
  reserve_fraction = 0
}
`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds+"llama70", "weights_bytes", "140000000000"),
				resource.TestCheckResourceAttr(ds+"llama70", "min_gpus", "2"),
				resource.TestCheckResourceAttr(ds+"llama70", "tensor_parallel", "2"),
				resource.TestCheckResourceAttr(ds+"llama70", "nodes_per_replica", "1"),
				resource.TestCheckResourceAttr(ds+"llama70", "needs_lws", "false"),
				resource.TestCheckResourceAttr(ds+"llama70", "replicas_per_node", "4"),
				resource.TestCheckResourceAttr(ds+"llama70", "reserve_fraction", "0.1"),
				resource.TestCheckResourceAttr(ds+"llama70", "overhead_bytes_per_gpu", "1073741824"),
				// (72 GB − 70 GB − 1.07 GB of overhead) × 2 ÷ 1 GB = 1.85 → 1.
				resource.TestCheckResourceAttr(ds+"llama70", "max_concurrency_per_replica", "1"),
				resource.TestCheckResourceAttr(ds+"llama70", "fit", "weights 140 GB ÷ tensor_parallel 2 = 70 GB + KV cache of one request 1 GB ÷ 2 = 0.5 GB + overhead 1.07 GB = 71.57 GB per GPU, and a 80 GB GPU holds 72 GB after the 0.1 reserve (1 requests at once)"),

				resource.TestCheckResourceAttr(ds+"deepseek", "weights_bytes", "671000000000"),
				// 671 GB ÷ (77.31 − 1.07) GB = 8.8 → 9 GPUs; whole nodes: 16.
				resource.TestCheckResourceAttr(ds+"deepseek", "min_gpus", "9"),
				resource.TestCheckResourceAttr(ds+"deepseek", "tensor_parallel", "16"),
				resource.TestCheckResourceAttr(ds+"deepseek", "nodes_per_replica", "2"),
				resource.TestCheckResourceAttr(ds+"deepseek", "needs_lws", "true"),
				resource.TestCheckResourceAttr(ds+"deepseek", "replicas_per_node", "0"),
				resource.TestCheckNoResourceAttr(ds+"deepseek", "max_concurrency_per_replica"),

				// 400 GB ÷ 72 GB = 5.6 → 6, and 6 divides 48 heads and 6 KV heads;
				// (72 − 66.67) × 6 ÷ 1.07 GB (8,192 × 128 KiB) = 29.8 → 29.
				resource.TestCheckResourceAttr(ds+"six", "min_gpus", "6"),
				resource.TestCheckResourceAttr(ds+"six", "tensor_parallel", "6"),
				resource.TestCheckResourceAttr(ds+"six", "replicas_per_node", "1"),
				resource.TestCheckResourceAttr(ds+"six", "max_concurrency_per_replica", "29"),
				resource.TestCheckResourceAttr(ds+"six", "valid_tensor_parallel.#", "7"), // 1, 2, 3, 6, 12, 24, 48
				resource.TestCheckResourceAttr(ds+"six", "valid_tensor_parallel.3", "6"),

				resource.TestCheckResourceAttr(ds+"bytes", "min_gpus", "1"),
				resource.TestCheckResourceAttr(ds+"bytes", "replicas_per_node", "4"),
			),
		}},
	})
}

// Bad input fails the plan with the attribute's path.
func TestAccInferenceSizingValidation(t *testing.T) {
	env := acctest.Env(t)
	config := func(body string) string {
		return acctest.Provider(env) + "data \"aiplatform_inference_sizing\" \"x\" {\n  gpus_per_node = 8\n" + body + "\n}\n"
	}
	step := func(body string, parts ...string) resource.TestStep {
		return resource.TestStep{Config: config(body), PlanOnly: true, ExpectError: acctest.ErrorMatching(parts...)}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			step(`params_billion = 70
  dtype = "fp4"
  gpu_memory = "80G"`, `dtype`, `fp4`),
			step(`params_billion = 70
  gpu_memory = "80G"`, `dtype`, `params_billion needs dtype`),
			step(`model_bytes = 1
  params_billion = 70
  dtype = "fp16"
  gpu_memory = "80G"`, `params_billion`, `not both`),
			step(`gpu_memory = "80G"`, `model_bytes`, `give model_bytes`),
			step(`model_bytes = 1
  gpu_memory = "80G"
  reserve_fraction = 1`, `reserve_fraction`, `less than 1`),
			step(`model_bytes = 1
  gpu_memory = "-80Gi"`, `gpu_memory`, `GPU memory must be positive`),
			step(`model_bytes = 1
  gpu_memory = "eighty"`, `gpu_memory`, `"eighty"`),
			step(`params_billion = 4000
  dtype = "fp16"
  gpu_memory = "80G"`, `params_billion`, `8000 GB of weights with 1.07 GB of overhead per GPU do not fit 64 GPUs of 80 GB`),
			step(`model_bytes = 1000000000
  gpu_memory = "80G"
  kv_cache_bytes_per_token = 131072`, `context_length`, `needs context_length`),
			step(`model_bytes = 1000000000
  gpu_memory = "80G"
  kv_cache_bytes_per_request = 1
  kv_cache_bytes_per_token = 131072
  context_length = 10`, `kv_cache_bytes_per_token`, `not both`),
			step(`model_bytes = 1000000000
  gpu_memory = "80G"
  attention_heads = 32
  kv_heads = 6`, `kv_heads`, `6 KV heads do not divide the 32 attention heads`),
			step(`model_bytes = 1000000000
  gpu_memory = "80G"
  overhead_bytes_per_gpu = -1`, `overhead_bytes_per_gpu`, `must not be negative`),
			// 700 GB needs 10 GPUs; 7 attention heads allow 1 and 7 only.
			step(`model_bytes = 700000000000
  gpu_memory = "80G"
  attention_heads = 7`, `model_bytes`, `need at least 10 GPUs, but no tensor parallelism from 10 to 64`),
		},
	})
}

// The tensor-parallel rule of issue #28 through Terraform: without the heads
// the sizing picks a power of two (a 70B model that 3 GPUs hold gets 4, not
// the 3 that vLLM refuses for its 64 heads) and says so in
// tensor_parallel_rule; with them, a divisor of the attention heads that
// divides or is a multiple of the KV heads. Shapes: Llama 3 70B (64 heads,
// 8 KV heads, 80 layers), Llama 3 8B (32, 8, 32 layers), DeepSeek-V3 671B
// (128 heads, and MLA, whose config says 128 KV heads), Llama 2 13B (40, 40).
func TestAccInferenceSizingTensorParallel(t *testing.T) {
	env := acctest.Env(t)
	ds := "data.aiplatform_inference_sizing."
	model := func(name, body, heads string) string {
		return "data \"aiplatform_inference_sizing\" \"" + name + "\" {\n" + body + "}\n" +
			"data \"aiplatform_inference_sizing\" \"" + name + "_heads\" {\n" + body + heads + "}\n"
	}
	const powers = "powers of two only: attention_heads is not given"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config: acctest.Provider(env) +
				// 140 GB + 2.68 GB of KV (8,192 tokens × 327,680 B) + 1.07 GB per GPU: 3 GPUs.
				model("l70", `  params_billion = 70
  dtype = "bf16"
  gpu_memory = "80G"
  gpus_per_node = 8
  kv_cache_bytes_per_token = 327680
  context_length = 8192
`, "  attention_heads = 64\n  kv_heads = 8\n") +
				// 16 GB + 4.29 GB of KV (32,768 × 131,072 B) on 12 GB cards (10.8 GB usable): 3 GPUs.
				model("l8", `  params_billion = 8
  dtype = "bf16"
  gpu_memory = "12G"
  gpus_per_node = 4
  kv_cache_bytes_per_token = 131072
  context_length = 32768
`, "  attention_heads = 32\n  kv_heads = 8\n") +
				// 671 GB on 80 GB cards: 10 GPUs, not whole 8-GPU nodes: 16.
				model("ds", `  params_billion = 671
  dtype = "fp8"
  gpu_memory = "80G"
  gpus_per_node = 8
`, "  attention_heads = 128\n  kv_heads = 128\n") +
				// 26 GB on 8 GB cards (7.2 usable) with 1 GB overhead: 5 GPUs; 5 divides 40 heads.
				model("l13", `  params_billion = 13
  dtype = "fp16"
  gpu_memory = "8G"
  gpus_per_node = 8
  overhead_bytes_per_gpu = 1000000000
`, "  attention_heads = 40\n  kv_heads = 40\n"),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds+"l70", "min_gpus", "3"),
				resource.TestCheckResourceAttr(ds+"l70", "tensor_parallel", "4"),
				resource.TestCheckResourceAttr(ds+"l70", "replicas_per_node", "2"),
				resource.TestMatchResourceAttr(ds+"l70", "tensor_parallel_rule", regexp.MustCompile("^"+powers)),
				resource.TestCheckResourceAttr(ds+"l70", "valid_tensor_parallel.#", "7"), // 1, 2, 4, …, 64
				resource.TestCheckResourceAttr(ds+"l70", "valid_tensor_parallel.2", "4"),
				resource.TestCheckResourceAttr(ds+"l70_heads", "tensor_parallel", "4"),
				resource.TestCheckResourceAttr(ds+"l70_heads", "tensor_parallel_rule",
					"divisors of the model's 64 attention heads that divide or are a multiple of its 8 KV heads"),

				resource.TestCheckResourceAttr(ds+"l8", "min_gpus", "3"),
				resource.TestCheckResourceAttr(ds+"l8", "tensor_parallel", "4"),
				resource.TestMatchResourceAttr(ds+"l8", "tensor_parallel_rule", regexp.MustCompile("^"+powers)),
				resource.TestCheckResourceAttr(ds+"l8_heads", "tensor_parallel", "4"),
				resource.TestCheckResourceAttr(ds+"l8_heads", "valid_tensor_parallel.#", "6"), // 1, 2, 4, 8, 16, 32

				resource.TestCheckResourceAttr(ds+"ds", "min_gpus", "10"),
				resource.TestCheckResourceAttr(ds+"ds", "tensor_parallel", "16"),
				resource.TestCheckResourceAttr(ds+"ds", "needs_lws", "true"),
				resource.TestMatchResourceAttr(ds+"ds", "tensor_parallel_rule", regexp.MustCompile("^"+powers)),
				resource.TestCheckResourceAttr(ds+"ds_heads", "tensor_parallel", "16"),
				resource.TestCheckResourceAttr(ds+"ds_heads", "nodes_per_replica", "2"),

				resource.TestCheckResourceAttr(ds+"l13", "min_gpus", "5"),
				resource.TestCheckResourceAttr(ds+"l13", "tensor_parallel", "8"),
				resource.TestCheckResourceAttr(ds+"l13_heads", "tensor_parallel", "5"),
				resource.TestCheckResourceAttr(ds+"l13_heads", "valid_tensor_parallel.#", "8"), // 1, 2, 4, 5, 8, 10, 20, 40
				resource.TestCheckResourceAttr(ds+"l13_heads", "tensor_parallel_rule",
					"divisors of the model's 40 attention heads that divide or are a multiple of its 40 KV heads"),
			),
		}},
	})
}
