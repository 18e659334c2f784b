package helm

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func kserveChartDir(t *testing.T, chart string) string {
	return moduleChart(t, "github.com/kserve/kserve", "v0.20.0", "charts/"+chart)
}

// The values aiplatform_kserve gives KServe's resources chart render no
// cert-manager object (the chart's own `certManager.enabled: false` does not
// do that alone), keep the inferenceservice-config ConfigMap and the default
// ClusterStorageContainer, and set the deployment mode.
func TestKServeValuesRender(t *testing.T) {
	dir := kserveChartDir(t, KServeResourcesChart)

	// Upstream's switch alone: Issuer and Certificate still rendered.
	naive, _ := renderRelease(t, Source{Path: dir}, "kserve", "kserve", map[string]any{"kserve": map[string]any{"certManager": map[string]any{"enabled": false}}})
	if !slices.Contains(naive, "Issuer/selfsigned-issuer") {
		t.Errorf("certManager.enabled=false alone: %v (expected the chart to render the Issuer anyway; if it no longer does, simplify Values)", naive)
	}

	vals, err := KServeConfig{DeploymentMode: "Standard", Requests: map[string]string{"cpu": "50m"}}.Values(nil, map[string]any{"kserve": map[string]any{"controller": map[string]any{"gateway": map[string]any{"domain": "models.example"}}}})
	if err != nil {
		t.Fatal(err)
	}
	objs, _ := renderRelease(t, Source{Path: dir}, "kserve", "kserve", vals)
	for _, o := range objs {
		if strings.HasPrefix(o, "Issuer/") {
			t.Errorf("cert-manager object %s rendered", o)
		}
	}
	// The Certificate is in the chart's base resources, unconditionally:
	// the release leaves it out (Omit).
	if !slices.Contains(objs, "Certificate/serving-cert") {
		t.Errorf("Certificate/serving-cert no longer rendered (simplify Omit): %v", objs)
	}
	if got := (KServeConfig{}).Omit(); !slices.Equal(got, []string{"cert-manager.io"}) {
		t.Errorf("Omit without cert-manager: %v", got)
	}
	if got := (KServeConfig{CertManager: true}).Omit(); got != nil {
		t.Errorf("Omit with cert-manager: %v", got)
	}
	for _, want := range []string{"ConfigMap/inferenceservice-config", "ClusterStorageContainer/default", "Deployment/kserve-controller-manager"} {
		if !slices.Contains(objs, want) {
			t.Errorf("%s not rendered: %v", want, objs)
		}
	}
	if got := GetPath(vals, "kserve", "controller", "gateway", "domain"); got != "models.example" {
		t.Errorf("the user's values lost: domain %v", got)
	}
	if got := KServeConfigFromValues(vals); got.DeploymentMode != "Standard" || got.Ingress || got.CertManager || got.Requests["cpu"] != "50m" {
		t.Errorf("read back %+v", got)
	}
	if _, err := (KServeConfig{DeploymentMode: "Serverless"}).Values(nil, nil); err == nil {
		t.Error("deprecated mode name Serverless accepted")
	}
	if got := KServeConfigFromValues(map[string]any{}); got.DeploymentMode != "Knative" || !got.Ingress {
		t.Errorf("chart defaults read as %+v, want Knative with ingress", got)
	}
}

// The llmisvc resources chart, with aiplatform_kserve's values, renders the
// controller and its webhooks but neither the objects KServe's release owns
// (the shared ConfigMap and ClusterStorageContainer) nor cert-manager's
// Issuer; the switch reads back for import.
func TestKServeLLMISvcValuesRender(t *testing.T) {
	cfg := KServeConfig{DeploymentMode: "Standard", LLMInferenceService: true, Requests: map[string]string{"memory": "128Mi"}}
	vals, err := cfg.LLMISvcValues()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := vals["aiplatform"]; ok {
		t.Errorf("the import marker reached the llmisvc chart: %v", vals)
	}
	objs, _ := renderRelease(t, Source{Path: kserveChartDir(t, KServeLLMISvcChart)}, "kserve-llmisvc", "kserve", vals)
	for _, o := range objs {
		if strings.HasPrefix(o, "Issuer/") || o == "ConfigMap/inferenceservice-config" || strings.HasPrefix(o, "ClusterStorageContainer/") {
			t.Errorf("%s rendered", o)
		}
	}
	for _, want := range []string{"Deployment/llmisvc-controller-manager", "Service/" + KServeLLMWebhookService, "ValidatingWebhookConfiguration/llminferenceserviceconfig.serving.kserve.io"} {
		if !slices.Contains(objs, want) {
			t.Errorf("%s not rendered: %v", want, objs)
		}
	}
	res, err := cfg.Values(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !KServeConfigFromValues(res).LLMInferenceService || KServeConfigFromValues(map[string]any{}).LLMInferenceService {
		t.Error("llm_inference_service does not read back from the resources release's values")
	}
}

// The release's post-renderer leaves out the objects of the omitted groups
// and keeps the rest.
func TestOmitGroups(t *testing.T) {
	in := bytes.NewBufferString(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: serving-cert, namespace: kserve}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kserve-controller-manager, namespace: kserve, labels: {app.kubernetes.io/managed-by: kserve-controller-manager}}
---
apiVersion: v1
kind: Service
metadata: {name: kserve-webhook-server-service, namespace: kserve}
`)
	out, err := keepCRDs{omit: []string{"cert-manager.io"}}.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	// Helm sets its managed-by label over the chart's: recorded as Helm's.
	if s := out.String(); strings.Contains(s, "Certificate") || !strings.Contains(s, "kserve-webhook-server-service") ||
		strings.Contains(s, "managed-by: kserve-controller-manager") || !strings.Contains(s, "managed-by: Helm") {
		t.Errorf("post-rendered:\n%s", s)
	}
}
