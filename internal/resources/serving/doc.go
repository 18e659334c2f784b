// Package serving holds the inference-serving resources, one file (or one
// file per verb) each:
//
//   - aiplatform_lws_group (lws_*.go): LeaderWorkerSet groups for models
//     sharded over nodes, sized at plan (internal/sizing);
//   - aiplatform_model_deployment (model_deployment*.go): the single-node
//     serving path, a Deployment and Service of a model server;
//   - aiplatform_ray_cluster, aiplatform_ray_service (ray_*.go): KubeRay;
//   - aiplatform_inference_pool (inference_pool*.go): a Gateway API Inference
//     Extension InferencePool and its endpoint picker;
//   - aiplatform_serving_runtime, aiplatform_llm_service_preset
//     (serving_runtime*.go, llm_service_preset*.go): KServe runtimes and
//     LLMInferenceService presets;
//   - data aiplatform_inference_sizing: the sizing arithmetic alone.
//
// The serving groups record their pods' labels in the run's plan registry
// (planned.go), where internal/rules checks an inference pool's selector
// against them.
package serving
