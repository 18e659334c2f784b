package kueue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
)

// multiKueueController is the AdmissionCheck controller name of MultiKueue.
const multiKueueController = "kueue.x-k8s.io/multikueue"

// ModifyPlan is the generic plan, plus: an update when the configured
// kubeconfig differs from the live Secret's, and the worker check.
func (r *multiKueueCluster) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.clusterObject.ModifyPlan(ctx, req, resp)
	if resp.Diagnostics.HasError() || req.Plan.Raw.IsNull() {
		return
	}
	var cfg, plan multiKueueClusterModel
	if d := req.Config.Get(ctx, &cfg); d.HasError() {
		return
	}
	if d := resp.Plan.Get(ctx, &plan); d.HasError() {
		return
	}
	if r.client != nil && object.Known(plan.Name) {
		// A MultiKueueConfig of this run may name it.
		resp.Diagnostics.Append(rules.Plan(ctx, r.client, planned.MultiKueueCluster{Name: plan.Name.ValueString()})...)
	}
	hash := plan.KubeconfigSHA256
	switch {
	case cfg.Kubeconfig.IsUnknown():
		hash = types.StringUnknown()
	case !cfg.Kubeconfig.IsNull():
		hash = types.StringValue(sha([]byte(cfg.Kubeconfig.ValueString())))
	}
	if !hash.Equal(plan.KubeconfigSHA256) {
		// The Secret is rewritten: Kueue judges the worker again.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("kubeconfig_sha256"), hash)...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("active"), types.BoolUnknown())...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("active_message"), types.StringUnknown())...)
	}
	if r.client == nil || !object.Known(plan.Name) || !object.Known(plan.KubeconfigSecret) || !object.Known(plan.KueueNamespace) || cfg.Kubeconfig.IsUnknown() {
		return
	}
	plan.Kubeconfig = cfg.Kubeconfig
	resp.Diagnostics.Append(checkWorker(ctx, r.client, &plan)...)
}

// checkWorker warns when the worker cannot be reached with its kubeconfig
// or lacks the queues the manager dispatches to it.
func checkWorker(ctx context.Context, manager *kube.Client, m *multiKueueClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	warn := func(at, summary, detail string) {
		diags.AddAttributeWarning(path.Root(at), summary, detail)
	}
	var data []byte
	if !m.Kubeconfig.IsNull() {
		data = []byte(m.Kubeconfig.ValueString())
	} else {
		ref := m.secretRef()
		d, found, err := manager.SecretData(ctx, ref, kubeconfigKey)
		switch {
		case err != nil:
			warn("kubeconfig_secret", "Cannot read the worker's kubeconfig", err.Error())
			return diags
		case !found:
			warn("kubeconfig_secret", "The worker's kubeconfig Secret is missing",
				fmt.Sprintf("Secret %s has no key %q (or does not exist): Kueue marks MultiKueueCluster %s inactive until it does. "+
					"Create it, or give the kubeconfig in kubeconfig_wo.", ref, kubeconfigKey, m.Name.ValueString()))
			return diags
		}
		data = d
	}
	worker, err := kube.NewClientFromKubeconfig(data)
	if err == nil {
		_, err = worker.ServerVersion()
	}
	if err != nil {
		warn("kubeconfig_secret", "MultiKueue worker unreachable",
			fmt.Sprintf("The worker of MultiKueueCluster %s does not answer with its kubeconfig: %v. Kueue will mark it inactive and dispatch nothing to it.",
				m.Name.ValueString(), err))
		return diags
	}
	cqs, lqs, err := dispatchedQueues(ctx, manager, m.Name.ValueString())
	if err != nil {
		warn("name", "Cannot list the manager's MultiKueue queues", err.Error())
		return diags
	}
	if len(cqs) == 0 {
		return diags
	}
	missing, err := missingQueues(ctx, worker, cqs, lqs)
	if err != nil {
		warn("kubeconfig_secret", "Cannot list the worker's queues", err.Error())
		return diags
	}
	if len(missing) > 0 {
		warn("name", "MultiKueue worker lacks the manager's queues",
			fmt.Sprintf("The manager dispatches workloads of %s to MultiKueueCluster %s, and MultiKueue submits each one's copy to the "+
				"worker under the same queue names, but the worker has no %s. Those workloads would wait there forever: "+
				"create the queues in the worker.", strings.Join(cqs, ", "), m.Name.ValueString(), strings.Join(missing, ", ")))
	}
	return diags
}

// dispatchedQueues lists the manager's ClusterQueues that dispatch to the
// MultiKueueCluster named cluster (through a MultiKueue AdmissionCheck whose
// MultiKueueConfig lists it) and the LocalQueues that feed them.
func dispatchedQueues(ctx context.Context, c *kube.Client, cluster string) (cqs []string, lqs []kube.Ref, err error) {
	configs, err := c.List(ctx, multiKueueConfigKind, "")
	if err != nil {
		return nil, nil, err
	}
	withCluster := map[string]bool{}
	for _, cfg := range configs {
		for _, name := range object.List(cfg.Object, "spec", "clusters") {
			if name == cluster {
				withCluster[cfg.GetName()] = true
			}
		}
	}
	if len(withCluster) == 0 {
		return nil, nil, nil
	}
	checks, err := c.List(ctx, admissionCheckKind, "")
	if err != nil {
		return nil, nil, err
	}
	useCheck := map[string]bool{}
	for _, ac := range checks {
		spec := object.Fields(ac.Object, "spec")
		p := object.Fields(spec, "parameters")
		if spec["controllerName"] == multiKueueController && p["kind"] == "MultiKueueConfig" && withCluster[fmt.Sprint(p["name"])] {
			useCheck[ac.GetName()] = true
		}
	}
	queues, err := c.List(ctx, clusterQueueKind, "")
	if err != nil {
		return nil, nil, err
	}
	dispatching := map[string]bool{}
	for _, cq := range queues {
		for _, rule := range object.Items(cq.Object, "spec", "admissionChecksStrategy", "admissionChecks") {
			if useCheck[fmt.Sprint(rule["name"])] {
				dispatching[cq.GetName()] = true
			}
		}
	}
	if len(dispatching) == 0 {
		return nil, nil, nil
	}
	locals, err := c.List(ctx, localQueueKind, "")
	if err != nil {
		return nil, nil, err
	}
	for _, lq := range locals {
		if dispatching[fmt.Sprint(object.Field(lq.Object, "spec", "clusterQueue"))] {
			lqs = append(lqs, kube.Ref{Namespace: lq.GetNamespace(), Name: lq.GetName()})
		}
	}
	for name := range dispatching {
		cqs = append(cqs, name)
	}
	sort.Strings(cqs)
	return cqs, lqs, nil
}

// missingQueues names the queues the worker lacks.
func missingQueues(ctx context.Context, worker *kube.Client, cqs []string, lqs []kube.Ref) ([]string, error) {
	has := map[string]bool{}
	for _, k := range []kube.Kind{clusterQueueKind, localQueueKind} {
		list, err := worker.List(ctx, k, "")
		if err != nil {
			return nil, err
		}
		for _, o := range list {
			has[k.Kind+" "+kube.Ref{Namespace: o.GetNamespace(), Name: o.GetName()}.String()] = true
		}
	}
	var missing []string
	for _, cq := range cqs {
		if !has["ClusterQueue "+cq] {
			missing = append(missing, "ClusterQueue "+cq)
		}
	}
	for _, lq := range lqs {
		if !has["LocalQueue "+lq.String()] {
			missing = append(missing, "LocalQueue "+lq.String())
		}
	}
	return missing, nil
}

// validateMultiKueueCluster checks a configured kubeconfig by Kueue's rules
// for a MultiKueue worker's (a kubeconfig Kueue refuses makes the cluster
// inactive, found only after the apply).
func validateMultiKueueCluster(m *multiKueueClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !object.Known(m.Kubeconfig) {
		return diags
	}
	if err := checkKubeconfig([]byte(m.Kubeconfig.ValueString())); err != nil {
		diags.AddAttributeError(path.Root("kubeconfig_wo"), "Kubeconfig Kueue would refuse", err.Error())
	}
	return diags
}

func checkKubeconfig(data []byte) error {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("not a kubeconfig: %v", err)
	}
	ctxName := cfg.CurrentContext
	kctx, ok := cfg.Contexts[ctxName]
	if ctxName == "" || !ok {
		return fmt.Errorf("current-context %q names no context of the kubeconfig", ctxName)
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return fmt.Errorf("context %q names cluster %q, which the kubeconfig does not define", ctxName, kctx.Cluster)
	}
	user := cfg.AuthInfos[kctx.AuthInfo]
	switch {
	case cluster.Server == "":
		return fmt.Errorf("cluster %q has no server URL", kctx.Cluster)
	case !strings.HasPrefix(cluster.Server, "https://"):
		return fmt.Errorf("cluster %q: server %q is not https", kctx.Cluster, cluster.Server)
	case cluster.InsecureSkipTLSVerify:
		return fmt.Errorf("cluster %q sets insecure-skip-tls-verify: Kueue requires TLS verified with certificate-authority-data", kctx.Cluster)
	case cluster.CertificateAuthority != "":
		return fmt.Errorf("cluster %q names a certificate-authority file: the Kueue manager cannot read files of this machine; use certificate-authority-data", kctx.Cluster)
	case user == nil:
		return fmt.Errorf("context %q names user %q, which the kubeconfig does not define", ctxName, kctx.AuthInfo)
	case user.TokenFile != "" || user.ClientCertificate != "" || user.ClientKey != "":
		return errors.New("the user's credentials are files (tokenFile, client-certificate or client-key): the Kueue manager cannot read files of this machine; put them inline (token, client-certificate-data, client-key-data)")
	case user.Username != "" || user.Password != "":
		return errors.New("basic auth (username/password) is not allowed by Kueue")
	case user.Exec != nil || user.AuthProvider != nil:
		return errors.New("exec and auth-provider plugins are not allowed by Kueue; use a service account token")
	case user.Token == "" && len(user.ClientCertificateData) == 0:
		return errors.New("the user has no credentials: give a token or client-certificate-data and client-key-data")
	}
	return nil
}
