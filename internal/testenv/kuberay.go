package testenv

import (
	"context"
	"errors"
	"fmt"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// KubeRay's operator (github.com/ray-project/kuberay/ray-operator, main.go at
// the module root) runs as a local process: it reconciles RayClusters,
// RayJobs and RayServices into pods and Services. It needs no webhook — v1.5
// serves its RayCluster validating webhook only with ENABLE_WEBHOOKS=true, and
// its CRDs have a single version — so nothing in the cluster points back at
// it. It talks to the API server only; pods are run (marked Running and Ready)
// by kwok.

// kubeRayModule is the module that holds KubeRay's operator and CRDs.
const kubeRayModule = podrunner.KubeRayModule

// KubeRayCRDDir is the directory of KubeRay's CRDs (RayCluster, RayJob,
// RayService, all ray.io/v1) in the ray-operator module.
func KubeRayCRDDir(ctx context.Context) (string, error) {
	dir, err := ModuleDir(ctx, kubeRayModule, KubeRayVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config", "crd", "bases"), nil
}

// kubeRayLocal is what running the KubeRay operator locally takes.
type kubeRayLocal struct {
	healthURL string // http://127.0.0.1:<port>: /readyz and /healthz
}

func (e *Env) prepareKubeRay() error {
	free, err := pickPorts(1)
	if err != nil {
		return err
	}
	e.operators.kuberay = &kubeRayLocal{healthURL: fmt.Sprintf("http://127.0.0.1:%d", free[0])}
	return nil
}

// args are the operator's flags (see main.go of the module). No
// --config file: with one, every flag is ignored.
func (k *kubeRayLocal) args(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		// Loopback only, on a free port; the default :8082 listens on every
		// interface.
		"--health-probe-bind-address=" + strings.TrimPrefix(k.healthURL, "http://"),
		"--metrics-addr=0", // no metrics server (default :8080)
		// One operator, nothing to elect.
		"--enable-leader-election=false",
		// Pods are created for the default scheduler: no Volcano, YuniKorn or
		// KAI PodGroups (off by default; said here because Kueue, not a batch
		// scheduler, is what gates RayClusters in this cluster).
		"--enable-batch-scheduler=false",
		"--log-stdout-encoder=console",
	}
}

// StartKubeRay starts the KubeRay operator and waits until its /readyz is ok
// (a ping: the manager runs; a RayCluster created before its caches synced is
// reconciled when they have). Start calls it with Options.RunKubeRay; call it
// again after StopKubeRay.
func (e *Env) StartKubeRay(ctx context.Context) error {
	if e.External {
		return errors.New("testenv: the cluster is external (TESTENV_KUBECONFIG), so testenv does not run its KubeRay operator")
	}
	if e.operators.kuberay == nil {
		return errors.New("testenv: the environment was started without Options.RunKubeRay")
	}
	if p := e.proc(KubeRayOperator); p != nil && !p.Exited() {
		return errors.New("testenv: the KubeRay operator is already running")
	}
	t := time.Now()
	p, err := e.start(KubeRayOperator, e.operators.kuberay.args(e.Kubeconfig))
	if err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, p, e.operators.kuberay.healthURL+"/readyz", &http.Client{Timeout: 2 * time.Second}); err != nil {
		return err
	}
	e.logf("kuberay-operator %s ready (%s)", KubeRayVersion, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// StopKubeRay stops the KubeRay operator only: RayClusters then stay as they
// are, their pods are neither created nor deleted.
func (e *Env) StopKubeRay() error {
	return e.stopComponent(KubeRayOperator, "KubeRay operator")
}

// stopComponent stops one running component of a local cluster.
func (e *Env) stopComponent(c Component, what string) error {
	if e.External {
		return fmt.Errorf("testenv: the cluster is external (TESTENV_KUBECONFIG), so testenv does not run its %s", what)
	}
	p := e.proc(c)
	if p == nil || p.Exited() {
		return fmt.Errorf("testenv: the %s is not running", what)
	}
	p.Stop()
	return nil
}
