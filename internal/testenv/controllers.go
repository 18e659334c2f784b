package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// Controller is a controller a test needs running (Options.Controllers):
// testenv installs its chart with the Helm SDK (internal/helm), or
// server-side applies its manifest file when it ships no chart, the pod
// runner runs its pods with the binary testenv built, and Start waits until
// they are Ready and its webhooks answer. This is the one way testenv runs a
// controller; the chart, namespace and default values are the pod adapter's
// (package podrunner, one file per controller).
type Controller struct {
	adapter *podrunner.Adapter
	// values turns the chart's default values into the release's values.
	values func(chartDefaults map[string]any) (map[string]any, error)
}

// Name is the controller's adapter name ("kueue", "lws", "kuberay").
func (c Controller) Name() string { return c.adapter.Name }

// DefaultKueueFrameworks are the integrations Kueue() enables when given
// none.
var DefaultKueueFrameworks = []string{"batch/job"}

// KueueNamespace is the namespace Kueue's chart is installed in.
const KueueNamespace = catalog.KueueNamespace

// Kueue is the Kueue manager (Kueue's chart from the module cache, in
// kueue-system) with the given integrations enabled (the chart's
// managerConfig.controllerManagerConfigYaml integrations.frameworks), default
// DefaultKueueFrameworks, and manageJobsWithoutQueueName false. When it
// integrates another controller's kinds (ray.io/*), list that controller
// first: Kueue needs their CRDs when it starts.
func Kueue(frameworks ...string) Controller {
	return kueueController(podrunner.Kueue, frameworks)
}

// KueueVersions are the Kueue versions KueueAt runs; KueueVersion is
// Kueue()'s.
var KueueVersions = podrunner.KueueVersions

// KueueAt is Kueue(frameworks...) at one of KueueVersions: that version's
// chart, and its manager, built on first use and cached by version (the
// cold build takes minutes; progress is logged). It panics on another
// version: a test's fixed choice.
func KueueAt(version string, frameworks ...string) Controller {
	a, err := podrunner.KueueAt(version)
	if err != nil {
		panic(err)
	}
	return kueueController(a, frameworks)
}

func kueueController(a *podrunner.Adapter, frameworks []string) Controller {
	if len(frameworks) == 0 {
		frameworks = DefaultKueueFrameworks
	}
	return Controller{adapter: a, values: func(defaults map[string]any) (map[string]any, error) {
		return helm.KueueConfig{Frameworks: frameworks}.Values(defaults, a.Install.Values)
	}}
}

// LWS is the LeaderWorkerSet controller (LWS's chart from the module cache;
// only in lws-system, see package podrunner).
func LWS() Controller { return ControllerOf(podrunner.LWS) }

// KServe is KServe's controller manager (its kserve-crd and kserve-resources
// charts from the module cache, in namespace kserve, deployment mode
// Standard, webhook certificates from testenv instead of cert-manager; see
// package podrunner). Its binary is built on request (minutes cold).
func KServe() Controller { return ControllerOf(podrunner.KServe) }

// LLMISvc is KServe's LLMInferenceService controller (the llmisvc charts);
// list it after KServe().
func LLMISvc() Controller { return ControllerOf(podrunner.LLMISvc) }

// KubeRay is the KubeRay operator (the stand-in chart in
// testdata/charts/kuberay-operator, with KubeRay's CRDs from the module).
func KubeRay() Controller { return ControllerOf(podrunner.KubeRay) }

// EndpointPicker is the Gateway API Inference Extension's endpoint picker
// (podrunner.EndpointPicker): nothing is installed; the pod runner runs the
// picker pods a test creates (an aiplatform_inference_pool's). Its CRD is
// InferencePoolCRDDir's, for Options.CRDDirs.
func EndpointPicker() Controller { return ControllerOf(podrunner.EndpointPicker) }

// ControllerOf is the controller of a registered pod adapter, with the
// adapter's default values: how a test asks for a controller that has no
// constructor of its own here (an adapter is one file in package podrunner).
func ControllerOf(a *podrunner.Adapter) Controller { return Controller{adapter: a} }

// controllerTimeout bounds a chart's install (every object ready).
func (e *Env) controllerTimeout() time.Duration { return max(e.opts.Timeout, 5*time.Minute) }

// installControllers installs Options.Controllers in order and waits until
// each one's webhooks answer.
func (e *Env) installControllers(ctx context.Context) error {
	client := kube.NewClientFromREST(e.RESTConfig, false)
	for _, c := range e.opts.Controllers {
		t := time.Now()
		a := c.adapter
		if !a.Installs() {
			// Runs pods the tests create (podrunner.EndpointPicker): its
			// binary is built and its adapter active, nothing to install.
			e.logf("%s %s: the pod runner runs its pods", a.Name, a.Binary.Version)
			continue
		}
		if a.Exclusive != "" {
			// Taken before the install, so that the install's wait for
			// the controller does not count the turn of another test
			// process's copy of it; held until Stop.
			release, err := process.MachineLock(ctx, a.Exclusive, func(m string) { e.logf("%s: %s", a.Name, m) })
			if err != nil {
				return err
			}
			e.mu.Lock() // as Stop reads it
			e.releases = append(e.releases, release)
			e.mu.Unlock()
		}
		if a.Install.Manifests != (podrunner.Source{}) {
			if err := e.applyManifests(ctx, client, a); err != nil {
				return err
			}
			if err := e.waitAnswers(ctx, a); err != nil {
				return err
			}
			e.logf("%s %s applied and ready (%s)", a.Name, a.Binary.Version, time.Since(t).Round(10*time.Millisecond))
			continue
		}
		cas, err := e.provideWebhookCerts(ctx, a)
		if err != nil {
			return err
		}
		if err := e.installCRDChart(ctx, client, a); err != nil {
			return err
		}
		ch, err := e.chart(ctx, a)
		if err != nil {
			return err
		}
		values := a.Install.Values
		if c.values != nil {
			if values, err = c.values(ch.Values); err != nil {
				return fmt.Errorf("testenv: %s's values: %w", a.Name, err)
			}
		}
		rel := &helm.Release{Client: client, Namespace: a.Install.Namespace, Name: a.Install.Release, Log: func(m string) { e.logf("%s: %s", a.Name, m) }}
		if _, err := rel.Install(ctx, helm.Options{Chart: ch, Values: values, Timeout: e.controllerTimeout(), Omit: a.Install.Omit}); err != nil {
			return fmt.Errorf("testenv: installing %s's chart: %w", a.Name, err)
		}
		if err := e.injectCABundles(ctx, a, cas); err != nil {
			return err
		}
		if err := e.waitAnswers(ctx, a); err != nil {
			return err
		}
		e.logf("%s %s installed and ready (%s)", a.Name, a.Binary.Version, time.Since(t).Round(10*time.Millisecond))
	}
	return nil
}

// chart loads an adapter's chart, with the CRDs of Install.CRDs copied into a
// copy of it under <Dir>/charts.
func (e *Env) chart(ctx context.Context, a *podrunner.Adapter) (*chart.Chart, error) {
	dir, err := a.Install.Chart.Path(ctx)
	if err != nil {
		return nil, err
	}
	if a.Install.CRDs != (podrunner.Source{}) {
		crds, err := a.Install.CRDs.Path(ctx)
		if err != nil {
			return nil, err
		}
		out := filepath.Join(e.Dir, "charts", a.Name)
		_ = os.RemoveAll(out)
		if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
			return nil, err
		}
		if err := os.CopyFS(filepath.Join(out, "crds"), os.DirFS(crds)); err != nil {
			return nil, err
		}
		dir = out
	}
	return helm.LoadChart(helm.Source{Path: dir})
}

// waitAnswers waits until the adapter's webhooks answer and discovery lists
// the API it serves (Options.Timeout): clients that check discovery first
// (as the provider does) see it as soon as Start returns. Discovery of a
// CRD's group version can lag behind the CRD's resource answering.
func (e *Env) waitAnswers(ctx context.Context, a *podrunner.Adapter) error {
	client, err := e.probeClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	for {
		err := e.served(a)
		if err == nil && a.Answers != nil {
			err = a.Answers(ctx, client)
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s's webhooks do not answer after %s (last: %v)\n%s", a.Name, e.opts.Timeout, err, e.podLogs(a))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// served returns nil when discovery lists a resource of a.Install.Serves.
func (e *Env) served(a *podrunner.Adapter) error {
	if a.Install.Serves == "" {
		return nil
	}
	list, err := e.Client.Discovery().ServerResourcesForGroupVersion(a.Install.Serves)
	if err != nil {
		return fmt.Errorf("discovery of %s: %w", a.Install.Serves, err)
	}
	if len(list.APIResources) == 0 {
		return fmt.Errorf("discovery lists no resource of %s", a.Install.Serves)
	}
	return nil
}

// probeClient is the dynamic client of the webhook probes, without
// warnings (Kueue's v1beta1 probe would log the API server's deprecation
// warning).
func (e *Env) probeClient() (dynamic.Interface, error) {
	cfg := rest.CopyConfig(e.RESTConfig)
	cfg.WarningHandler = rest.NoWarnings{}
	return dynamic.NewForConfig(cfg)
}

// podLogs are the logs of the pod runner's processes for an adapter's pods.
func (e *Env) podLogs(a *podrunner.Adapter) string {
	logs, _ := filepath.Glob(filepath.Join(e.Dir, "pods", a.Install.Namespace+"_*.log"))
	var out []string
	for _, l := range logs {
		out = append(out, process.LogTail(l))
	}
	return strings.Join(out, "\n")
}

// checkExternalControllers checks, in an external cluster, that what
// Options.Controllers asks for is there: the controllers' APIs served, their
// webhooks answering. Nothing is installed.
func (e *Env) checkExternalControllers(ctx context.Context) error {
	for _, c := range e.opts.Controllers {
		a := c.adapter
		if _, err := e.Client.Discovery().ServerResourcesForGroupVersion(a.Install.Serves); err != nil {
			return fmt.Errorf("testenv: the external cluster does not serve %s (Options.Controllers needs %s running there): %w", a.Install.Serves, a.Name, err)
		}
		if err := e.waitAnswers(ctx, a); err != nil {
			return fmt.Errorf("%w (with TESTENV_KUBECONFIG, Options.Controllers needs %s running in that cluster)", err, a.Name)
		}
		e.logf("the external cluster's %s answers", a.Name)
	}
	return nil
}

// PodProcesses lists the processes the pod runner runs for pods (the
// controllers of Options.Controllers), named "pod <namespace>/<name>"; empty
// for a detached cluster, whose pods the agent process runs.
func (e *Env) PodProcesses() []Process { return e.net.Processes() }

// controller is the installed controller of that name.
func (e *Env) controller(name string) (*podrunner.Adapter, error) {
	if e.External {
		return nil, fmt.Errorf("testenv: the cluster is external (TESTENV_KUBECONFIG), so testenv does not run its %s", name)
	}
	i := slices.IndexFunc(e.opts.Controllers, func(c Controller) bool { return c.Name() == name })
	if i < 0 {
		return nil, fmt.Errorf("testenv: the environment was started without %s in Options.Controllers", name)
	}
	return e.opts.Controllers[i].adapter, nil
}

// StopController stops an installed controller, as an outage would: its
// Deployments are scaled to zero, and StopController returns once their pods
// are gone and its webhooks no longer answer. StartController brings it back.
func (e *Env) StopController(ctx context.Context, name string) error {
	a, err := e.controller(name)
	if err != nil {
		return err
	}
	if err := e.scale(ctx, a, 0); err != nil {
		return err
	}
	client, err := e.probeClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	for {
		// The pods are gone from the API before the pod runner has stopped
		// their processes: down is when the webhooks stop answering too.
		pods, err := e.Client.CoreV1().Pods(a.Install.Namespace).List(ctx, metav1.ListOptions{})
		down := err == nil && len(pods.Items) == 0
		if down && a.Answers != nil {
			down = a.Answers(ctx, client) != nil
		}
		if down {
			e.logf("%s stopped", name)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s still running after %s", name, e.opts.Timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// StartController starts a controller StopController stopped and waits until
// its Deployments are Available and its webhooks answer.
func (e *Env) StartController(ctx context.Context, name string) error {
	a, err := e.controller(name)
	if err != nil {
		return err
	}
	if err := e.scale(ctx, a, 1); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	for {
		deps, err := e.Client.AppsV1().Deployments(a.Install.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil && !slices.ContainsFunc(deps.Items, func(d appsv1.Deployment) bool { return d.Status.AvailableReplicas < 1 }) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s not Available after %s\n%s", name, e.opts.Timeout, e.podLogs(a))
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := e.waitAnswers(ctx, a); err != nil {
		return err
	}
	e.logf("%s started again", name)
	return nil
}

// scale sets the replicas of every Deployment in the controller's namespace.
func (e *Env) scale(ctx context.Context, a *podrunner.Adapter, replicas int32) error {
	deps := e.Client.AppsV1().Deployments(a.Install.Namespace)
	list, err := deps.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return errors.New("testenv: no Deployment in " + a.Install.Namespace)
	}
	for _, d := range list.Items {
		s, err := deps.GetScale(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		if _, err := deps.UpdateScale(ctx, d.Name, s, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("testenv: scaling %s/%s to %d: %w", a.Install.Namespace, d.Name, replicas, err)
		}
	}
	return nil
}
