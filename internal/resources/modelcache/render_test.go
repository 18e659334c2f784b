package modelcache

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// The default downloader images cannot run here (kwok fakes the pods), so
// this renders the Job and DaemonSet for every scheme and checks what a
// kubelet would run: command, environment, credentials and mounts.

func testSpec(t *testing.T, mode, uri, revision, secret string) *spec {
	t.Helper()
	src, err := ParseSource(uri)
	if err != nil {
		t.Fatal(err)
	}
	s := &spec{
		Namespace: "serving", Name: "llama", Mode: mode, Source: src, Revision: revision,
		EffectiveRevision: src.EffectiveRevision(revision), SecretRef: secret,
		Downloader: DefaultDownloader(src.Scheme), MountPath: "/models/llama",
		BackoffLimit: 2, Timeout: 90 * time.Minute, TimeoutText: "90m",
		Size: "300Gi", AccessModes: DefaultAccessModes,
	}
	s.SubPath = SubPath(uri, s.EffectiveRevision)
	if mode == ModeNodeLocal {
		s.HostPath = "/var/lib/model-cache/serving/llama"
		s.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	}
	return s
}

// roundTrip renders an apply configuration as the API server receives it.
func roundTrip[T any](t *testing.T, ac any) *T {
	t.Helper()
	body, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func mountsOf(c corev1.Container) map[string]corev1.VolumeMount {
	out := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		out[m.Name] = m
	}
	return out
}

var schemeCases = []struct {
	uri, revision, secret string
	image, tool           string
	env                   map[string]string
}{
	{"hf://meta-llama/Llama-3.1-70B-Instruct", "", "hf-token", "python:3.12-slim", `hf download "$MODEL_REPO" --revision "$MODEL_REVISION"`,
		map[string]string{"MODEL_REPO": "meta-llama/Llama-3.1-70B-Instruct", "MODEL_REVISION": "main"}},
	{"s3://models/llama/70b/", "v3", "aws", "amazon/aws-cli:2.17.0", `aws s3 sync --only-show-errors "s3://$MODEL_BUCKET/$MODEL_PREFIX"`,
		map[string]string{"MODEL_BUCKET": "models", "MODEL_PREFIX": "llama/70b/", "MODEL_REVISION": "v3"}},
	{"gs://models/llama", "", "", "gcr.io/google.com/cloudsdktool/google-cloud-cli:499.0.0-slim", `gcloud storage rsync --recursive "gs://$MODEL_BUCKET/$MODEL_PREFIX"`,
		map[string]string{"MODEL_BUCKET": "models", "MODEL_PREFIX": "llama", "MODEL_REVISION": "latest"}},
	{"oci://registry.example.com/models/llama", "2024-06", "registry", "ghcr.io/oras-project/oras:v1.2.0", `oras pull "$@" --output "$MODEL_CACHE_DIR" "$MODEL_REF"`,
		map[string]string{"MODEL_REF": "registry.example.com/models/llama:2024-06", "MODEL_REVISION": "2024-06"}},
	{"oci://registry.example.com:5000/models/llama:v1", "", "", "ghcr.io/oras-project/oras:v1.2.0", `oras pull`,
		map[string]string{"MODEL_REF": "registry.example.com:5000/models/llama:v1", "MODEL_REVISION": "v1"}},
	{"https://example.com/models/tiny.tar.gz?sig=abc", "1", "web", "alpine:3.21", `wget "$@" "$MODEL_URL"`,
		map[string]string{"MODEL_URL": "https://example.com/models/tiny.tar.gz?sig=abc", "MODEL_REVISION": "1"}},
}

func checkDownload(t *testing.T, s *spec, c corev1.Container, image, tool string, want map[string]string) {
	t.Helper()
	if c.Name != containerDownload || c.Image != image {
		t.Errorf("download container %s image %q, want %q", c.Name, c.Image, image)
	}
	if len(c.Command) != 3 || c.Command[0] != "sh" || c.Command[1] != "-c" || !strings.Contains(c.Command[2], tool) {
		t.Errorf("command %q does not run %q", c.Command, tool)
	}
	if len(c.Command) == 3 && (!strings.Contains(c.Command[2], "model-cache: progress bytes=") || strings.Contains(c.Command[2], s.Source.URI)) {
		t.Errorf("script must report progress and read the URI from the environment only:\n%s", c.Command[2])
	}
	env := envOf(c)
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	for k, v := range map[string]string{
		"MODEL_URI": s.Source.URI, "MODEL_CACHE_ROOT": WarmRoot, "MODEL_CACHE_DIR": WarmRoot + "/" + s.SubPath, "MODEL_CACHE_SUBPATH": s.SubPath,
	} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	mounts := mountsOf(c)
	if m := mounts[volumeCache]; m.MountPath != WarmRoot || m.ReadOnly {
		t.Errorf("cache mount %+v", m)
	}
	if s.SecretRef == "" {
		if len(c.EnvFrom) != 0 || len(mounts) != 1 {
			t.Errorf("no secret_ref, yet envFrom %v, mounts %v", c.EnvFrom, mounts)
		}
	} else {
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != s.SecretRef {
			t.Errorf("envFrom %+v, want the Secret %s", c.EnvFrom, s.SecretRef)
		}
		if m := mounts[volumeSecret]; m.MountPath != SecretDir || !m.ReadOnly {
			t.Errorf("secret mount %+v", m)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil || strings.Contains(strings.ToLower(e.Name), "token") {
				t.Errorf("credentials must come from the Secret only, found env %s", e.Name)
			}
		}
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("terminationMessagePolicy %q: a failure must carry the log's end", c.TerminationMessagePolicy)
	}
}

func checkSecretVolume(t *testing.T, s *spec, vols []corev1.Volume) {
	t.Helper()
	found := false
	for _, v := range vols {
		if v.Name == volumeSecret {
			found = v.Secret != nil && v.Secret.SecretName == s.SecretRef
		}
	}
	if found != (s.SecretRef != "") {
		t.Errorf("secret volume present=%v, secret_ref %q", found, s.SecretRef)
	}
}

func TestRenderJobPerScheme(t *testing.T) {
	for _, tc := range schemeCases {
		t.Run(tc.uri, func(t *testing.T) {
			s := testSpec(t, ModePVC, tc.uri, tc.revision, tc.secret)
			job := roundTrip[batchv1.Job](t, s.job("main-0123abcd"))
			if job.Name != s.jobName() || len(job.Name) > 63 || job.Namespace != "serving" || job.Labels[LabelName] != "llama" {
				t.Errorf("job metadata %s/%s %v", job.Namespace, job.Name, job.Labels)
			}
			spec := job.Spec
			if *spec.BackoffLimit != 2 || *spec.ActiveDeadlineSeconds != 5400 || *spec.TTLSecondsAfterFinished != JobTTL {
				t.Errorf("backoffLimit %d activeDeadlineSeconds %d ttl %d", *spec.BackoffLimit, *spec.ActiveDeadlineSeconds, *spec.TTLSecondsAfterFinished)
			}
			pod := spec.Template.Spec
			if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
				t.Fatalf("pod: restartPolicy %s, %d init containers, %d containers", pod.RestartPolicy, len(pod.InitContainers), len(pod.Containers))
			}
			checkDownload(t, s, pod.InitContainers[0], tc.image, tc.tool, tc.env)
			fin := pod.Containers[0]
			if fin.Name != containerFinalize || fin.Image != HelperImage || envOf(fin)["MODEL_CACHE_KEEP"] != "main-0123abcd" || mountsOf(fin)[volumeCache].MountPath != WarmRoot {
				t.Errorf("finalize container %+v", fin)
			}
			var claim string
			for _, v := range pod.Volumes {
				if v.Name == volumeCache && v.PersistentVolumeClaim != nil {
					claim = v.PersistentVolumeClaim.ClaimName
				}
			}
			if claim != "llama" {
				t.Errorf("cache volume claim %q, want llama", claim)
			}
			checkSecretVolume(t, s, pod.Volumes)
			if spec.Template.Annotations[AnnotationSubPath] != s.SubPath || spec.Template.Labels[LabelName] != "llama" {
				t.Errorf("pod template metadata %v %v", spec.Template.Labels, spec.Template.Annotations)
			}
		})
	}
}

func TestRenderDaemonSetPerScheme(t *testing.T) {
	for _, tc := range schemeCases {
		t.Run(tc.uri, func(t *testing.T) {
			s := testSpec(t, ModeNodeLocal, tc.uri, tc.revision, tc.secret)
			s.PodAnnotations = map[string]string{"sidecar.istio.io/inject": "false"}
			ds := roundTrip[appsv1.DaemonSet](t, s.daemonSet("", s.record(nil)))
			if ds.Name != "llama" || readRecord(ds.Annotations) == nil {
				t.Errorf("daemonset %s annotations %v", ds.Name, ds.Annotations)
			}
			if ds.Spec.Selector.MatchLabels[LabelName] != "llama" || ds.Spec.Template.Labels[LabelName] != "llama" {
				t.Errorf("selector %v, template labels %v", ds.Spec.Selector, ds.Spec.Template.Labels)
			}
			if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.MaxUnavailable.String() != "100%" {
				t.Errorf("update strategy %+v: every node re-warms at once", ds.Spec.UpdateStrategy)
			}
			pod := ds.Spec.Template.Spec
			if pod.NodeSelector["nvidia.com/gpu.product"] != "NVIDIA-H100-80GB-HBM3" {
				t.Errorf("nodeSelector %v", pod.NodeSelector)
			}
			if len(pod.Tolerations) != 1 || pod.Tolerations[0].Operator != corev1.TolerationOpExists || pod.Tolerations[0].Key != "" {
				t.Errorf("tolerations %+v: a GPU pool's taints must not keep the cache off", pod.Tolerations)
			}
			if len(pod.InitContainers) != 2 || len(pod.Containers) != 1 {
				t.Fatalf("%d init containers, %d containers", len(pod.InitContainers), len(pod.Containers))
			}
			checkDownload(t, s, pod.InitContainers[0], tc.image, tc.tool, tc.env)
			if fin := pod.InitContainers[1]; fin.Name != containerFinalize || fin.Image != HelperImage {
				t.Errorf("finalize %+v", fin)
			}
			if _, ok := envOf(pod.InitContainers[1])["MODEL_CACHE_KEEP"]; ok {
				t.Error("MODEL_CACHE_KEEP set without an older revision")
			}
			if idle := pod.Containers[0]; idle.Name != containerIdle || idle.Image != IdleImage {
				t.Errorf("idle %+v", idle)
			}
			var host *corev1.HostPathVolumeSource
			for _, v := range pod.Volumes {
				if v.Name == volumeCache {
					host = v.HostPath
				}
			}
			if host == nil || host.Path != s.HostPath || *host.Type != corev1.HostPathDirectoryOrCreate {
				t.Errorf("hostPath %+v", host)
			}
			checkSecretVolume(t, s, pod.Volumes)
			if ds.Spec.Template.Annotations["sidecar.istio.io/inject"] != "false" {
				t.Errorf("pod annotations %v", ds.Spec.Template.Annotations)
			}
		})
	}
}

func TestRenderClaim(t *testing.T) {
	s := testSpec(t, ModePVC, "hf://org/model", "abc", "")
	s.StorageClass = "filestore"
	w := &warmed{Revision: "abc", SubPath: s.SubPath, At: "2026-01-01T00:00:00Z"}
	pvc := roundTrip[corev1.PersistentVolumeClaim](t, s.claim(s.record(w)))
	if pvc.Name != "llama" || *pvc.Spec.StorageClassName != "filestore" || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany ||
		pvc.Spec.Resources.Requests.Storage().String() != "300Gi" {
		t.Errorf("claim %+v", pvc.Spec)
	}
	if pvc.Annotations[AnnotationWarmedRevision] != "abc" || pvc.Annotations[AnnotationSubPath] != s.SubPath {
		t.Errorf("annotations %v", pvc.Annotations)
	}
	rec := readRecord(pvc.Annotations)
	if rec == nil || rec.URI != "hf://org/model" || *rec.Revision != "abc" || rec.Warmed.At != w.At || rec.Timeout != "90m" {
		t.Errorf("record %+v", rec)
	}
	// No class: the server's default applies, and none is sent.
	s.StorageClass = ""
	if pvc := roundTrip[corev1.PersistentVolumeClaim](t, s.claim(s.record(nil))); pvc.Spec.StorageClassName != nil {
		t.Errorf("storageClassName %q sent without storage_class", *pvc.Spec.StorageClassName)
	}
}

// Every script is valid POSIX shell.
func TestScriptsParse(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	scripts := map[string]string{"finalize": finalizeScript}
	for _, s := range Schemes {
		scripts[string(s)] = DefaultDownloader(s).Command[2]
	}
	for name, script := range scripts {
		if out, err := exec.Command(sh, "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s: sh -n: %v\n%s", name, err, out)
		}
	}
}

// finalize keeps the new revision and the one before, removes the rest,
// marks the revision complete and reports its size.
func TestFinalizeScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	root := t.TempDir()
	for _, d := range []string{"new", "keep", "old1", "old2"} {
		if err := os.MkdirAll(filepath.Join(root, d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "sub", "model.safetensors"), make([]byte, 5000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	msgFile := filepath.Join(t.TempDir(), "termination-log")
	script := strings.ReplaceAll(finalizeScript, "/dev/termination-log", msgFile)
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = append(os.Environ(), "MODEL_CACHE_ROOT="+root, "MODEL_CACHE_DIR="+filepath.Join(root, "new"), "MODEL_CACHE_SUBPATH=new", "MODEL_CACHE_KEEP=keep")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	left, _ := os.ReadDir(root)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "keep,new" {
		t.Errorf("left %v, want keep and new", names)
	}
	if _, err := os.Stat(filepath.Join(root, "new", ".model-cache-complete")); err != nil {
		t.Error(err)
	}
	msg, _ := os.ReadFile(msgFile)
	o := parseProgress(string(msg))
	if o.SizeBytes == nil || *o.SizeBytes < 5000 || o.Files == nil || *o.Files != 1 {
		t.Errorf("termination message %q parsed as %+v", msg, o)
	}

	// An empty download fails, saying so.
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(sh, "-c", script)
	cmd.Env = append(os.Environ(), "MODEL_CACHE_ROOT="+root, "MODEL_CACHE_DIR="+filepath.Join(root, "empty"), "MODEL_CACHE_SUBPATH=empty")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "left") {
		t.Errorf("empty download: err %v, output %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "keep")); err != nil {
		t.Error("a failed finalize must not prune")
	}
}

func TestParseProgress(t *testing.T) {
	o := parseProgress("Fetching 30 files\nmodel-cache: progress bytes=1024 files=3\nsomething else\nmodel-cache: progress bytes=4294967296 files=12\n")
	if o.SizeBytes == nil || *o.SizeBytes != 4294967296 || o.Files == nil || *o.Files != 12 || o.String() != "4.0 GiB in 12 files" {
		t.Errorf("%+v %s", o, o)
	}
	if o := parseProgress("Completed 1.2 GiB/140.0 GiB (200 MiB/s)"); o.SizeBytes != nil || o.Files != nil || o.String() != "" {
		t.Errorf("%+v", o)
	}
	if o := parseProgress("files=7"); o.Files == nil || *o.Files != 7 || o.SizeBytes != nil {
		t.Errorf("%+v", o)
	}
}

func TestJobNameFitsLabel(t *testing.T) {
	s := testSpec(t, ModePVC, "hf://org/model", "", "")
	s.Name = strings.Repeat("a", 63)
	if n := s.jobName(); len(n) > 63 || !strings.HasPrefix(n, strings.Repeat("a", 46)+"-warm-") {
		t.Errorf("job name %q (%d)", n, len(n))
	}
	other := *s
	other.SubPath = "other"
	if other.jobName() == s.jobName() {
		t.Error("a new revision needs a new Job name")
	}
}
