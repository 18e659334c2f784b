package serving_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Adopting LeaderWorkerSets created by another field manager (as kubectl
// would) from objects written after LWS's published samples: import with
// generated configuration, an empty plan, the live object untouched; then
// scaling replicas 1 → 2 (force_conflicts: kubectl owns replicas) changes
// the replicas and nothing else — no container added beside the live ones;
// deleted, the object the generated configuration creates has the same spec.

// lwsSampleShaped is LWS's leaderworkerset_v1_leaderworkerset.yaml shape
// (written here, not copied): the object's labels, worker container nginx
// with a port and a CPU request of 50m under a limit of 100m.
const lwsSampleShaped = `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: sample
  namespace: default
  labels:
    app.kubernetes.io/name: leaderworkerset
    app.kubernetes.io/part-of: lws
spec:
  replicas: 1
  rolloutStrategy:
    type: RollingUpdate
    rollingUpdateConfiguration: {maxUnavailable: 1}
  leaderWorkerTemplate:
    size: 2
    restartPolicy: RecreateGroupOnPodRestart
    workerTemplate:
      spec:
        containers:
        - name: nginx
          image: nginxinc/nginx-unprivileged:1.27
          resources:
            limits: {cpu: 100m}
            requests: {cpu: 50m}
          ports:
          - containerPort: 8080
`

// lwsProductionShaped is what production groups carry beside that: a
// leader of its own, volumes (a memory emptyDir, a Secret, a ConfigMap),
// env from a Secret, a metrics sidecar and a native log-shipping sidecar,
// requests ≠ limits, GPUs on the H100 pool, and a preStop hook that no
// typed attribute carries (it goes in pod_template).
const lwsProductionShaped = `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: production, namespace: default}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      metadata: {labels: {role: leader}}
      spec:
        nodeSelector: {lwspool: h100}
        containers:
        - name: vllm-leader
          image: vllm/vllm-openai:v0.9.0
          args: [--model, /models/llama, --port, "8080"]
          env:
          - {name: HF_TOKEN, valueFrom: {secretKeyRef: {name: hf-token, key: token, optional: true}}}
          - {name: VLLM_LOGGING_LEVEL, value: INFO}
          ports: [{containerPort: 8080, name: http}]
          resources:
            requests: {cpu: "2", memory: 8Gi, nvidia.com/gpu: "1"}
            limits: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1"}
          volumeMounts:
          - {name: dshm, mountPath: /dev/shm}
          - {name: tls, mountPath: /etc/tls, readOnly: true}
          lifecycle:
            preStop: {exec: {command: [sleep, "5"]}}
        - name: metrics
          image: busybox:1.36
          args: [sleep, infinity]
          resources:
            requests: {cpu: 10m}
            limits: {cpu: 50m}
        volumes:
        - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}
        - {name: tls, secret: {secretName: serving-tls, optional: true}}
    workerTemplate:
      spec:
        nodeSelector: {lwspool: h100}
        initContainers:
        - name: log-shipper
          image: busybox:1.36
          restartPolicy: Always
          args: [sh, -c, "tail -F /logs/worker.log"]
          volumeMounts: [{name: logs, mountPath: /logs}]
        containers:
        - name: vllm-worker
          image: vllm/vllm-openai:v0.9.0
          command: [ray, start, --block]
          resources:
            requests: {cpu: 500m, nvidia.com/gpu: "1"}
            limits: {cpu: "1", nvidia.com/gpu: "1"}
          volumeMounts: [{name: logs, mountPath: /logs}, {name: config, mountPath: /etc/vllm}]
        volumes:
        - {name: logs, emptyDir: {}}
        - {name: config, configMap: {name: vllm-config, optional: true}}
`

func TestAccLWSGroupAdoptPublishedSample(t *testing.T) {
	adoptLWS(t, lwsSampleShaped,
		[]string{
			"Imported LeaderWorkerSet default/sample carries fields beyond the typed attributes",
			`metadata.labels["app.kubernetes.io/name"]`, `metadata.labels["app.kubernetes.io/part-of"]`,
		},
		[]string{`name = "nginx"`, `requests = { cpu = "50m" }`, `limits = { cpu = "100m" }`, `container_port = 8080`, `pod_template = null`})
}

func TestAccLWSGroupAdoptProductionShaped(t *testing.T) {
	adoptLWS(t, lwsProductionShaped,
		[]string{
			"the imported pod_template carries them",
			"spec.leaderWorkerTemplate.leaderTemplate.spec.containers[name=vllm-leader].lifecycle.preStop.exec.command",
		},
		[]string{`name = "vllm-leader"`, `name = "metrics"`, `name = "log-shipper"`, `restart_policy = "Always"`,
			`secret_key_ref = {`, `secret_name = "serving-tls"`, `medium = "Memory"`, `requests = { cpu = "500m"`, `preStop`})
}

// adoptLWS creates the object as kubectl would, imports it with generated
// configuration (the plan's output must contain each of warnings, the
// configuration each of generated, and no container "main"), applies the
// import, checks the empty plan and the untouched live object, then scales
// it with force_conflicts and checks that only spec.replicas changed.
func adoptLWS(t *testing.T, manifest string, warnings, generated []string) {
	env := acctest.Env(t)
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	created := &unstructured.Unstructured{}
	if err := created.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	name := created.GetName()
	obj := lwsObject("default", name)
	client := env.Dynamic.Resource(obj.GVR).Namespace("default")
	if _, err := client.Create(context.Background(), created, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	before, err := obj.Get(env)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(when string, allowed ...string) {
		t.Helper()
		live, err := obj.Get(env)
		if err != nil {
			t.Fatal(err)
		}
		if changed := kube.ChangedPaths(before.Object, live.Object); strings.Join(changed, " ") != strings.Join(allowed, " ") {
			t.Fatalf("%s changed %v in the live object, want %v", when, changed, allowed)
		}
	}

	dir := t.TempDir()
	write := func(d, file, body string) {
		if err := os.WriteFile(filepath.Join(d, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	provider := func(extra string) string {
		return acctest.RequiredProviders + "variable \"kubeconfig\" { type = string }\nprovider \"aiplatform\" {\n  config_path = var.kubeconfig\n" + extra + "}\n"
	}
	write(dir, "main.tf", provider("")+"import {\n  to = aiplatform_lws_group.adopted\n  id = \"default/"+name+"\"\n}\n")
	w := acctest.NewWorkspace(t, env, dir)
	out, err := w.Run("plan", "-generate-config-out=generated.tf")
	if err != nil {
		t.Fatal(out, err)
	}
	flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "│", "")), " ")
	for _, want := range warnings {
		if !strings.Contains(flat, want) {
			t.Errorf("the import's plan does not say %q:\n%s", want, out)
		}
	}
	gen, err := os.ReadFile(filepath.Join(w.Dir(), "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	genFlat := strings.Join(strings.Fields(string(gen)), " ")
	for _, want := range generated {
		if !strings.Contains(genFlat, want) {
			t.Errorf("the generated configuration lacks %q:\n%s", want, gen)
		}
	}
	if strings.Contains(string(gen), `"main"`) {
		t.Errorf("the generated configuration names a container main:\n%s", gen)
	}
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after import: exit code %d, want 0\n%s", code, out)
	}
	unchanged("import, apply and plan")

	scaled := regexp.MustCompile(`(?m)^(\s*replicas\s*=\s*)1\s*$`).ReplaceAllString(string(gen), "${1}2")
	if scaled == string(gen) {
		t.Fatalf("no replicas = 1 in the generated configuration:\n%s", gen)
	}
	write(w.Dir(), "generated.tf", scaled)
	write(w.Dir(), "main.tf", provider("  force_conflicts = true\n"))
	out, err = w.Run("plan")
	if err != nil {
		t.Fatal(out, err)
	}
	// The plan changes the replicas (and the GPUs they total) and says
	// nothing of other live changes: the preview found none.
	changes := regexp.MustCompile(`(?m)^\s+~ (\w+)\s+=`).FindAllStringSubmatch(out, -1)
	var changed []string
	for _, c := range changes {
		if c[1] != "gpus_total" {
			changed = append(changed, c[1])
		}
	}
	if !strings.Contains(out, "1 to change") || strings.Join(changed, " ") != "replicas" ||
		!regexp.MustCompile(`replicas\s+= 1 -> 2`).MatchString(out) || strings.Contains(out, "live fields") {
		t.Errorf("the scale's plan is not replicas 1 -> 2 alone:\n%s", out)
	}
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	unchanged("scaling", "spec.replicas")
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after scaling: exit code %d, want 0\n%s", code, out)
	}

	// The generated configuration reproduces the object: deleted, the
	// object it creates again has the same spec (the scaled replicas).
	scaledLive, err := obj.Get(env)
	if err != nil {
		t.Fatal(err)
	}
	obj.Delete(t, env)
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	again, err := obj.Get(env)
	if err != nil || again == nil {
		t.Fatalf("the object was not created again: %v", err)
	}
	if changed := kube.ChangedPaths(map[string]any{"spec": scaledLive.Object["spec"]}, map[string]any{"spec": again.Object["spec"]}); len(changed) > 0 {
		t.Errorf("the object created from the generated configuration differs from the adopted one at %v", changed)
	}
}
