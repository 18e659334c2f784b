package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

func (e *Env) startEtcd(ctx context.Context) error {
	client := fmt.Sprintf("http://127.0.0.1:%d", e.ports.etcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", e.ports.etcdPeer)
	t := time.Now()
	p, err := e.start(Etcd, []string{
		"--name=testenv",
		"--data-dir=" + filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=testenv=" + peer,
		"--unsafe-no-fsync", // test data: durability is not worth the latency
		"--log-level=warn",
	})
	if err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, p, client+"/health", &http.Client{Timeout: 2 * time.Second}); err != nil {
		return err
	}
	e.logf("etcd %s ready (%s)", EtcdVersion, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// apiServerArgs are kube-apiserver's flags; StartAPIServer reuses them as they
// are, so a restarted API server has the same port, keys and storage.
func (e *Env) apiServerArgs() []string {
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", e.ports.etcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", e.ports.apiServer),
		"--cert-dir=" + filepath.Join(e.Dir, "pki"),
		"--tls-cert-file=" + e.pki.servingCert,
		"--tls-private-key-file=" + e.pki.servingKey,
		"--client-ca-file=" + e.pki.caCert,
		"--token-auth-file=" + e.pki.tokenFile,
		// Front-proxy (request header) authentication, as in a real cluster:
		// for aggregated API servers, and so that the controller manager's and
		// scheduler's delegated authentication find a request-header CA in
		// kube-system/extension-apiserver-authentication instead of logging
		// errors about its absence.
		"--requestheader-client-ca-file=" + e.pki.caCert,
		"--requestheader-allowed-names=" + frontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + e.pki.proxyCert,
		"--proxy-client-key-file=" + e.pki.proxyKey,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + e.pki.saPub,
		"--service-account-signing-key-file=" + e.pki.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// The "kubernetes" Service's endpoints would be 127.0.0.1, which
		// Endpoints validation rejects (loopback); nothing in the cluster could
		// use them anyway, there being no pod network.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		// On SIGTERM, answer 429 until in-flight requests are done, then close
		// the listener within 2 s. Without it the server waits for open watches
		// up to --request-timeout (60 s) before exiting.
		"--shutdown-send-retry-after=true",
	}
	if e.opts.Egress {
		args = append(args, "--egress-selector-config-file="+e.egressConfigPath())
	}
	return append(args, e.opts.APIServerArgs...)
}

// startScheduling starts what makes pods run: kube-controller-manager,
// kube-scheduler and kwok, all with the admin kubeconfig.
func (e *Env) startScheduling(ctx context.Context) error {
	kc := e.Kubeconfig
	common := []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--tls-cert-file=" + e.pki.servingCert,
		"--tls-private-key-file=" + e.pki.servingKey,
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	}
	controllers := e.opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	t := time.Now()
	kcm, err := e.start(ControllerManager, append([]string{
		fmt.Sprintf("--secure-port=%d", e.ports.controllerManager),
		"--controllers=" + strings.Join(controllers, ","),
		"--service-account-private-key-file=" + e.pki.saKey,
		"--root-ca-file=" + e.pki.caCert,
		// Nodes are NotReady when their lease is older than this; it must
		// outlast kwok's lease (renewed at a quarter of its duration).
		fmt.Sprintf("--node-monitor-grace-period=%s", e.nodeLease()+10*time.Second),
	}, common...))
	if err != nil {
		return err
	}
	sched, err := e.start(Scheduler, append([]string{
		fmt.Sprintf("--secure-port=%d", e.ports.scheduler),
	}, common...))
	if err != nil {
		return err
	}

	kwokConfig, err := writeKwokConfig(ctx, e.Dir, e.runnerImagePattern())
	if err != nil {
		return err
	}
	kwok, err := e.start(Kwok, []string{
		"--kubeconfig=" + kc,
		"--config=" + kwokConfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + NodeAnnotation + "=fake",
		fmt.Sprintf("--node-lease-duration-seconds=%d", int(e.nodeLease().Seconds())), // without it kwok keeps no node leases and nodes go NotReady
		"--node-ip=127.0.0.1",
		"--cidr=10.244.0.0/16", // pod IPs: never routed, only reported in pod status
	})
	if err != nil {
		return err
	}

	// /healthz is always allowed without credentials on both components.
	https := e.httpClient("")
	if err := e.waitHTTP(ctx, kcm, fmt.Sprintf("https://127.0.0.1:%d/healthz", e.ports.controllerManager), https); err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, sched, fmt.Sprintf("https://127.0.0.1:%d/healthz", e.ports.scheduler), https); err != nil {
		return err
	}
	// kwok serves nothing we can poll; its readiness shows as nodes turning
	// Ready. Give it a moment to fail on a bad flag or config.
	select {
	case <-kwok.done:
		return fmt.Errorf("testenv: kwok exited (%v)\n%s", kwok.err, logTail(e.LogPath(Kwok)))
	case <-time.After(200 * time.Millisecond):
	}
	e.logf("kube-controller-manager, kube-scheduler, kwok %s running (%s)", KwokVersion, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// PodCompleteDelayAnnotation on a Job's pod sets how long kwok keeps it Running
// before it Succeeds: a Go duration ("30s") or an RFC 3339 time. Without it the
// pod completes as soon as it is Running.
const PodCompleteDelayAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"

// PodFailAnnotation on a pod makes kwok fail it instead of completing it: once
// Running (and after PodCompleteDelayAnnotation, if set) the pod turns Failed,
// its first init container (or, without init containers, its containers)
// terminated with exit code 1, reason Error and the annotation's value as the
// termination message. Works for any pod, not only a Job's: a DaemonSet's
// failed pod is replaced by its controller, and fails again.
const PodFailAnnotation = "pod-fail.stage.kwok.x-k8s.io/message"

// podFailStage is the Stage behind PodFailAnnotation; its delay is set by
// withDelayFromAnnotation like pod-complete's.
const podFailStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-fail
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.annotations["` + PodFailAnnotation + `"]'
      operator: 'Exists'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $message := index .metadata.annotations "` + PodFailAnnotation + `" }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: ContainersReady
      {{ if .spec.initContainers }}
      initContainerStatuses:
      {{ range $index, $item := .spec.initContainers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        state:
      {{ if eq $index 0 }}
          terminated:
            exitCode: 1
            finishedAt: {{ $now | Quote }}
            reason: Error
            message: {{ $message | Quote }}
            startedAt: {{ $now | Quote }}
      {{ else }}
          waiting:
            reason: PodInitializing
      {{ end }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          waiting:
            reason: PodInitializing
      {{ end }}
      {{ else }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          terminated:
            exitCode: 1
            finishedAt: {{ $now | Quote }}
            reason: Error
            message: {{ $message | Quote }}
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ end }}
      phase: Failed
`

// nodeLease is Options.NodeLease or its default.
func (e *Env) nodeLease() time.Duration {
	if e.opts.NodeLease > 0 {
		return e.opts.NodeLease
	}
	return 40 * time.Second
}

// kwokStages are the kwok Stage files (under kustomize/stage/ in the kwok
// module) that make nodes Ready and keep them so, and pods Running, Succeeded
// (Job pods) and deleted.
var kwokStages = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// writeKwokConfig writes <dir>/kwok.yaml: the stages read from the kwok module
// in the module cache (kwok refuses to start without any), pod-complete given
// a delay taken from PodCompleteDelayAnnotation and leaving pods with
// PodFailAnnotation to the pod-fail stage, which has the same delay. Pods
// with a container image matching runnerImages (a regular expression, ""
// for none) are left to the pod runner by pod-ready.
func writeKwokConfig(ctx context.Context, dir, runnerImages string) (string, error) {
	mod, err := ModuleDir(ctx, "sigs.k8s.io/kwok", KwokVersion)
	if err != nil {
		return "", err
	}
	var docs []string
	for _, name := range kwokStages {
		data, err := os.ReadFile(filepath.Join(mod, "kustomize", "stage", filepath.FromSlash(name)))
		if err != nil {
			return "", fmt.Errorf("testenv: kwok stage: %w", err)
		}
		if filepath.Base(name) == "pod-ready.yaml" && runnerImages != "" {
			if data, err = withoutImages(data, runnerImages); err != nil {
				return "", err
			}
		}
		if filepath.Base(name) == "pod-complete.yaml" {
			if data, err = withDelayFromAnnotation(data, PodCompleteDelayAnnotation, PodFailAnnotation); err != nil {
				return "", err
			}
		}
		docs = append(docs, strings.TrimSpace(string(data)))
	}
	fail, err := withDelayFromAnnotation([]byte(podFailStage), PodCompleteDelayAnnotation, "")
	if err != nil {
		return "", err
	}
	docs = append(docs, strings.TrimSpace(string(fail)))
	path := filepath.Join(dir, "kwok.yaml")
	return path, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644)
}

// withDelayFromAnnotation sets a Stage's spec.delay to 0 unless the object has
// the annotation, whose value is then the delay. A non-empty unless excludes
// objects that have that annotation from the stage.
func withDelayFromAnnotation(stage []byte, annotation, unless string) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return nil, err
	}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("testenv: kwok stage without spec")
	}
	if unless != "" {
		sel, _ := spec["selector"].(map[string]any)
		if sel == nil {
			sel = map[string]any{}
			spec["selector"] = sel
		}
		exprs, _ := sel["matchExpressions"].([]any)
		sel["matchExpressions"] = append(exprs, map[string]any{
			"key": fmt.Sprintf(".metadata.annotations[%q]", unless), "operator": "DoesNotExist",
		})
	}
	spec["delay"] = map[string]any{
		"durationMilliseconds": 0,
		"durationFrom": map[string]any{
			"expressionFrom": fmt.Sprintf(".metadata.annotations[%q]", annotation),
		},
	}
	return yaml.Marshal(obj)
}
