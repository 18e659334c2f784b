package testenv

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Workload operators besides Kueue — KubeRay (kuberay.go) and LeaderWorkerSet
// (lws.go) — run as local processes like the Kueue manager: built by
// EnsureBinaries, their CRDs read from their modules, started after the CRDs
// and nodes are in place and before the Kueue manager, stopped by Stop.

// withOperators returns opts with what RunKubeRay and RunLWS imply:
// Scheduling (their controllers create pods) and their CRDs.
func withOperators(ctx context.Context, opts Options) (Options, error) {
	for _, op := range []struct {
		run bool
		crd func(context.Context) (string, error)
	}{{opts.RunKubeRay, KubeRayCRDDir}, {opts.RunLWS, LWSCRDDir}} {
		if !op.run {
			continue
		}
		opts.Scheduling = true
		dir, err := op.crd(ctx)
		if err != nil {
			return opts, err
		}
		if !slices.Contains(opts.CRDDirs, dir) {
			opts.CRDDirs = append(slices.Clip(opts.CRDDirs), dir)
		}
	}
	return opts, nil
}

// operators are the components RunKubeRay and RunLWS need built.
func (o Options) operators() []Component {
	var out []Component
	if o.RunKubeRay {
		out = append(out, KubeRayOperator)
	}
	if o.RunLWS {
		out = append(out, LWSController)
	}
	return out
}

// startOperators starts the operators opts asks for; the CRDs must be
// Established.
func (e *Env) startOperators(ctx context.Context) error {
	if e.opts.RunKubeRay {
		if err := e.prepareKubeRay(); err != nil {
			return err
		}
		if err := e.StartKubeRay(ctx); err != nil {
			return err
		}
	}
	if e.opts.RunLWS {
		if err := e.prepareLWS(ctx); err != nil {
			return err
		}
		if err := e.StartLWS(ctx); err != nil {
			return err
		}
	}
	return nil
}

// checkExternalOperators checks, in an external cluster, that what RunKubeRay
// and RunLWS ask for is there: RayClusters served; LWS's webhooks answering.
func (e *Env) checkExternalOperators(ctx context.Context) error {
	if e.opts.RunKubeRay {
		gv := schema.GroupVersion{Group: "ray.io", Version: "v1"}
		if _, err := e.Client.Discovery().ServerResourcesForGroupVersion(gv.String()); err != nil {
			return fmt.Errorf("testenv: the external cluster does not serve %s (Options.RunKubeRay needs KubeRay there): %w", gv, err)
		}
	}
	if e.opts.RunLWS {
		if err := e.waitLWSWebhooks(ctx, nil); err != nil {
			return fmt.Errorf("%w (with TESTENV_KUBECONFIG, Options.RunLWS needs the LWS controller running in that cluster)", err)
		}
		e.logf("the external cluster's LWS webhooks answer")
	}
	return nil
}

// operators is the state of the Run* path: the Kueue manager, the KubeRay
// operator and the LWS controller as local processes.
type operators struct {
	kueuePorts [2]int        // the Kueue manager's webhook and health ports
	kueue      *kueueLocal   // with RunKueue
	kuberay    *kubeRayLocal // with RunKubeRay
	lws        *lwsLocal     // with RunLWS
}
