package testenv_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

var (
	servingRuntimes   = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1alpha1", Resource: "servingruntimes"}
	inferenceServices = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}
)

// TestPodRunnerKServe runs KServe v0.20.0 from the module cache through
// Options.Controllers: its CRD chart and resources chart, unchanged but for
// values (deployment mode Standard — no Knative, no Istio — and cert-manager's
// objects left out), the chart's manager pod run by the real manager, its
// webhooks served through the egress proxy with the certificate testenv
// issued and injected. A vLLM-like ServingRuntime (a fake image: kwok runs its
// pods) and an InferenceService naming it become a Deployment and a Service;
// KServe's validating webhook denies a bad InferenceService.
func TestPodRunnerKServe(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{
		Nodes:       []testenv.NodePool{{Name: "cpu", Count: 2}},
		Controllers: []testenv.Controller{testenv.KServe()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	t.Logf("cluster with KServe ready in %s", time.Since(start).Round(time.Second))

	pod := readyPod(ctx, t, env, podrunner.KServeNamespace, "control-plane=kserve-controller-manager")
	runs(t, env, pod, testenv.KServeManager, "--metrics-addr=127.0.0.1:")

	// The webhooks carry the CA testenv issued for the webhook Service.
	client := kube.NewClientFromREST(env.RESTConfig, false)
	secret, err := env.Client.CoreV1().Secrets(podrunner.KServeNamespace).Get(ctx, "kserve-webhook-server-cert", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if missing, err := client.WebhooksWithoutCA(ctx, podrunner.KServeNamespace, "kserve-webhook-server-service", secret.Data["ca.crt"]); err != nil || len(missing) > 0 {
		t.Fatalf("webhooks without the CA: %v (%v)", missing, err)
	}

	ns := "serving"
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The model's volume: KServe mounts a pvc:// storageUri's claim
	// directly (no storage initializer); the pod is scheduled once it exists.
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "models", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runtime := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
		"metadata": map[string]any{"name": "vllm-fake", "namespace": ns},
		"spec": map[string]any{
			"supportedModelFormats": []any{map[string]any{"name": "huggingface", "version": "1", "autoSelect": true}},
			"protocolVersions":      []any{"v2"},
			"containers": []any{map[string]any{
				"name":  "kserve-container",
				"image": "registry.example/fake/vllm-openai:v0",
				"args":  []any{"--model={{.Name}}", "--port=8080"},
				"resources": map[string]any{
					"requests": map[string]any{"cpu": "100m", "memory": "256Mi"},
					"limits":   map[string]any{"cpu": "1", "memory": "1Gi"},
				},
			}},
		},
	}}
	if _, err := env.Dynamic.Resource(servingRuntimes).Namespace(ns).Create(ctx, runtime, metav1.CreateOptions{}); err != nil {
		t.Fatalf("ServingRuntime: %v\n%s", err, logs(env))
	}

	isvc := func(name string, minReplicas, maxReplicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"predictor": map[string]any{
				"minReplicas": minReplicas, "maxReplicas": maxReplicas,
				"model": map[string]any{
					"modelFormat": map[string]any{"name": "huggingface"},
					"runtime":     "vllm-fake",
					"storageUri":  "pvc://models/tiny",
				},
			}},
		}}
	}

	t.Run("webhook denies a bad InferenceService", func(t *testing.T) {
		_, err := env.Dynamic.Resource(inferenceServices).Namespace(ns).Create(ctx, isvc("bad", 3, 1), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "MinReplicas' cannot be greater than MaxReplicas") {
			t.Fatalf("InferenceService with minReplicas 3 > maxReplicas 1: %v", err)
		}
	})

	t.Run("Standard mode: Deployment and Service", func(t *testing.T) {
		created, err := env.Dynamic.Resource(inferenceServices).Namespace(ns).Create(ctx, isvc("tiny", 1, 1), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("InferenceService: %v\n%s", err, logs(env))
		}
		// The mutating webhook (the defaulter) ran: it records the
		// deployment mode KServe chose.
		if mode := created.GetAnnotations()["serving.kserve.io/deploymentMode"]; mode != "Standard" && mode != "" {
			t.Errorf("deploymentMode annotation %q", mode)
		}
		waitFor(t, 3*time.Minute, "Deployment tiny-predictor Available", func() bool {
			d, err := env.Client.AppsV1().Deployments(ns).Get(ctx, "tiny-predictor", metav1.GetOptions{})
			return err == nil && d.Status.AvailableReplicas == 1
		})
		d, _ := env.Client.AppsV1().Deployments(ns).Get(ctx, "tiny-predictor", metav1.GetOptions{})
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "registry.example/fake/vllm-openai:v0" || !strings.Contains(strings.Join(c.Args, " "), "--model=tiny") {
			t.Errorf("predictor container %s %q: not the runtime's, with the model's name", c.Image, c.Args)
		}
		if owner := metav1.GetControllerOf(d); owner == nil || owner.Kind != "InferenceService" || owner.Name != "tiny" {
			t.Errorf("Deployment's controller %v", owner)
		}
		svc, err := env.Client.CoreV1().Services(ns).Get(ctx, "tiny-predictor", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Service tiny-predictor: %v", err)
		}
		if svc.Spec.Selector["app"] != "isvc.tiny-predictor" {
			t.Errorf("Service selector %v", svc.Spec.Selector)
		}
		// The pod mounts the model's claim read-only at /mnt/models.
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "serving.kserve.io/inferenceservice=tiny"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("predictor pods: %v (%v)", pods, err)
		}
		mounted := false
		for _, v := range pods.Items[0].Spec.Volumes {
			mounted = mounted || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "models")
		}
		if !mounted {
			t.Errorf("predictor pod volumes %v: no claim models", pods.Items[0].Spec.Volumes)
		}
		waitFor(t, 2*time.Minute, "InferenceService tiny Ready", func() bool {
			got, err := env.Dynamic.Resource(inferenceServices).Namespace(ns).Get(ctx, "tiny", metav1.GetOptions{})
			if err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if c, _ := c.(map[string]any); c["type"] == "Ready" && c["status"] == "True" {
					return true
				}
			}
			t.Logf("conditions: %v", conds)
			return false
		})
	})
}
