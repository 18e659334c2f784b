package kueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

const (
	// kubeconfigKey is the key of the Secret Kueue reads a worker's kubeconfig from.
	kubeconfigKey = "kubeconfig"
	// defaultKueueNamespace is where Kueue's chart runs the manager.
	defaultKueueNamespace = catalog.KueueNamespace
	// secretClusterLabel marks a Secret the provider wrote for a
	// MultiKueueCluster; only such a Secret is deleted with it.
	secretClusterLabel = "aiplatform.dev/multikueue-cluster"
	// activeWait is timeouts.create/update's default: how long an apply
	// waits for Kueue to report the worker Active; after it the apply
	// succeeds with a warning.
	activeWait = 30 * time.Second
)

type multiKueueClusterModel struct {
	object.ClusterMeta
	object.LiveChanges
	KubeconfigSecret types.String `tfsdk:"kubeconfig_secret"`
	KueueNamespace   types.String `tfsdk:"kueue_namespace"`
	Kubeconfig       types.String `tfsdk:"kubeconfig_wo"`
	KubeconfigSHA256 types.String `tfsdk:"kubeconfig_sha256"`
	Active           types.Bool   `tfsdk:"active"`
	ActiveMessage    types.String `tfsdk:"active_message"`
}

func (m *multiKueueClusterModel) secretRef() kube.Ref {
	ns := m.KueueNamespace.ValueString()
	if ns == "" {
		ns = defaultKueueNamespace
	}
	return kube.Ref{Namespace: ns, Name: m.KubeconfigSecret.ValueString()}
}

type clusterObject = object.Resource[multiKueueClusterModel, *multiKueueClusterModel]

// multiKueueCluster is the generic object resource for the MultiKueueCluster,
// plus the Secret holding the worker's kubeconfig when the configuration
// gives it (write-only: it reaches neither plan nor state; state holds its
// SHA-256, so a Secret changed or deleted out of band plans an update), and
// the plan-time check of the worker (multikueue_cluster_plan.go).
type multiKueueCluster struct {
	*clusterObject
	client *kube.Client
}

var (
	_ resource.ResourceWithConfigure      = (*multiKueueCluster)(nil)
	_ resource.ResourceWithImportState    = (*multiKueueCluster)(nil)
	_ resource.ResourceWithValidateConfig = (*multiKueueCluster)(nil)
	_ resource.ResourceWithModifyPlan     = (*multiKueueCluster)(nil)
)

// NewMultiKueueCluster is aiplatform_multikueue_cluster.
func NewMultiKueueCluster() resource.Resource {
	inner := object.New[multiKueueClusterModel](object.Spec[multiKueueClusterModel]{
		TypeName: "multikueue_cluster",
		Kind:     multiKueueClusterKind,
		Description: "A Kueue MultiKueueCluster: a worker cluster a MultiKueue manager dispatches workloads to, reached " +
			"with a kubeconfig stored in a Secret in Kueue's namespace of the manager. Give the kubeconfig as the " +
			"write-only `kubeconfig_wo` (Terraform ≥ 1.11) and the provider writes that Secret; or name a Secret you " +
			"manage. The kubeconfig is never stored in state, only its SHA-256.\n\n" +
			"Every plan checks the worker: that it answers with the kubeconfig, and that it has a ClusterQueue and a " +
			"LocalQueue of the same names as the manager's queues that dispatch to it (the ClusterQueues using a " +
			"`kueue.x-k8s.io/multikueue` admission check whose MultiKueueConfig lists this cluster, and their " +
			"LocalQueues) — MultiKueue creates each workload's copy in the worker under the same queue name, and " +
			"without those queues it waits there forever. What is missing is a **warning**, not an error: the worker's " +
			"queues are often created in the same apply (through another provider configuration) or by another team, " +
			"after this plan. The apply waits up to `timeouts.create` / `timeouts.update` (default 30 s) for Kueue to report " +
			"the worker Active (its Active condition, read into `active` and `active_message`), and warns — does not fail — " +
			"when it does not.",
		Attributes: map[string]schema.Attribute{
			"kubeconfig_secret": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Name of the Secret in `kueue_namespace` whose key `kubeconfig` holds the worker's kubeconfig " +
					"(the MultiKueueCluster's `clusterSource.kubeConfig` with `locationType: Secret`). Written by the provider " +
					"when `kubeconfig_wo` is set, else it must exist (the plan warns when it does not).",
				Validators: []validator.String{validators.DNSSubdomain()},
			},
			"kueue_namespace": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultKueueNamespace),
				MarkdownDescription: "Namespace the Kueue manager runs in, where it reads the Secret. Default `kueue-system`.",
				Validators:          []validator.String{validators.DNSLabel()},
			},
			"kubeconfig_wo": schema.StringAttribute{
				Optional: true, Sensitive: true, WriteOnly: true,
				MarkdownDescription: "The worker's kubeconfig (YAML), write-only: the provider stores it in the Secret " +
					"`kubeconfig_secret` (labelled `" + secretClusterLabel + "`, deleted with this resource) and keeps only " +
					"its SHA-256 in state; a different kubeconfig, or a Secret edited or deleted out of band, plans an " +
					"update (a kubeconfig another field manager wrote into the Secret is taken back only with the provider's " +
					"`force_conflicts`, like any field). Kueue's rules are checked at plan: TLS verified with `certificate-authority-data` (no CA file, " +
					"no `insecure-skip-tls-verify`), a server URL, credentials inline (a token or client certificate data: " +
					"no token or certificate files, no basic auth, no exec or auth-provider plugins).",
			},
			"kubeconfig_sha256": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "SHA-256 (hex) of the kubeconfig in the Secret, as last read; null when the Secret or its key is missing.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"active": schema.BoolAttribute{
				Computed:            true,
				MarkdownDescription: "Kueue's Active condition of the cluster: true when the manager reaches the worker; null before Kueue reported.",
			},
			"active_message": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The reason and message of the Active condition, e.g. why the worker is not reachable.",
			},
		},
		Fields: func(m *multiKueueClusterModel) map[string]any {
			return map[string]any{"spec": map[string]any{"clusterSource": map[string]any{
				"kubeConfig": map[string]any{"locationType": "Secret", "location": m.KubeconfigSecret.ValueString()},
			}}}
		},
		Read:       readMultiKueueCluster,
		Validate:   validateMultiKueueCluster,
		AfterApply: waitActive,
		// Up to timeouts.create/update, then a warning (waitActive).
		ApplyTimeout: activeWait,
	})
	return &multiKueueCluster{clusterObject: inner.(*clusterObject)}
}

func readMultiKueueCluster(live map[string]any, m *multiKueueClusterModel) {
	kc := object.Fields(live, "spec", "clusterSource", "kubeConfig")
	m.KubeconfigSecret = object.String(kc["location"], m.KubeconfigSecret)
	if m.KueueNamespace.IsNull() || m.KueueNamespace.IsUnknown() {
		m.KueueNamespace = types.StringValue(defaultKueueNamespace) // import
	}
	m.Active, m.ActiveMessage = types.BoolNull(), types.StringNull()
	for _, c := range object.Items(live, "status", "conditions") {
		if c["type"] != "Active" {
			continue
		}
		m.Active = types.BoolValue(c["status"] == "True")
		m.ActiveMessage = types.StringValue(fmt.Sprintf("%v: %v", c["reason"], c["message"]))
	}
}

// waitActive waits, up to activeWait, until Kueue reports the applied
// cluster Active, judging this generation of it; after that it takes the
// verdict as it is (none, or not active: a warning with Kueue's reason).
func waitActive(ctx context.Context, c *kube.Client, m *multiKueueClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	// ctx ends at timeouts.create/update (object.Spec.ApplyTimeout); the
	// last reading is what state records, Active or not.
	for {
		live, found, err := c.Get(ctx, multiKueueClusterKind, m.ObjectRef())
		if err != nil || !found {
			break
		}
		readMultiKueueCluster(live.Object, m)
		if activeNow(live.Object) {
			return diags
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
			continue
		}
		break
	}
	if !m.Active.IsNull() && !m.Active.ValueBool() {
		diags.AddAttributeWarning(path.Root("active"), "MultiKueue worker not active",
			fmt.Sprintf("Kueue cannot use MultiKueueCluster %s (still not Active after %s, timeouts): %s", m.Name.ValueString(),
				object.Budget(ctx, activeWait), m.ActiveMessage.ValueString()))
	}
	return diags
}

// activeNow tells whether the live cluster's Active condition is True and
// was observed at its current generation.
func activeNow(live map[string]any) bool {
	gen := object.Int64(object.Field(live, "metadata", "generation"))
	for _, c := range object.Items(live, "status", "conditions") {
		if c["type"] == "Active" {
			return c["status"] == "True" && object.Int64(c["observedGeneration"]).ValueInt64() >= gen.ValueInt64()
		}
	}
	return false
}

func (r *multiKueueCluster) Configure(ctx context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clusterObject.Configure(ctx, req, resp)
	r.client, _ = req.ProviderData.(*kube.Client)
}

func (r *multiKueueCluster) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	if !r.writeSecret(ctx, req.Config, req.Plan, &resp.Diagnostics) {
		return
	}
	r.clusterObject.Create(ctx, req, resp)
	r.recordHash(ctx, &resp.State, &resp.Diagnostics)
}

func (r *multiKueueCluster) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	if !r.writeSecret(ctx, req.Config, req.Plan, &resp.Diagnostics) {
		return
	}
	r.clusterObject.Update(ctx, req, resp)
	r.recordHash(ctx, &resp.State, &resp.Diagnostics)
	var prior, now multiKueueClusterModel
	if resp.Diagnostics.HasError() || req.State.Get(ctx, &prior).HasError() || resp.State.Get(ctx, &now).HasError() {
		return
	}
	if prior.secretRef() != now.secretRef() {
		// Moved to another Secret: the one this resource wrote goes.
		resp.Diagnostics.Append(r.deleteOwnSecret(ctx, prior)...)
	}
}

func (r *multiKueueCluster) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	r.clusterObject.Read(ctx, req, resp)
	r.recordHash(ctx, &resp.State, &resp.Diagnostics)
}

func (r *multiKueueCluster) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	r.clusterObject.Delete(ctx, req, resp)
	if resp.Diagnostics.HasError() || r.client == nil {
		return
	}
	var m multiKueueClusterModel
	if resp.Diagnostics.Append(req.State.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.deleteOwnSecret(ctx, m)...)
}

// deleteOwnSecret deletes m's Secret if this resource wrote it (its label
// names the cluster); a Secret managed elsewhere stays.
func (r *multiKueueCluster) deleteOwnSecret(ctx context.Context, m multiKueueClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	ref := m.secretRef()
	labels, found, err := r.client.SecretLabels(ctx, ref)
	if err == nil && found && labels[secretClusterLabel] == m.Name.ValueString() {
		err = r.client.DeleteSecret(ctx, ref)
	}
	if err != nil {
		diags.AddError("Deleting the kubeconfig Secret "+ref.String()+" failed", err.Error())
	}
	return diags
}

// writeSecret stores the configured kubeconfig in the Secret when the live
// Secret does not hold it already; false on error.
func (r *multiKueueCluster) writeSecret(ctx context.Context, config tfsdk.Config, plan tfsdk.Plan, diags *diag.Diagnostics) bool {
	var cfg, m multiKueueClusterModel
	if diags.Append(config.Get(ctx, &cfg)...); diags.HasError() {
		return false
	}
	if diags.Append(plan.Get(ctx, &m)...); diags.HasError() {
		return false
	}
	if cfg.Kubeconfig.IsNull() || r.client == nil {
		return true
	}
	data := []byte(cfg.Kubeconfig.ValueString())
	ref := m.secretRef()
	live, _, err := r.client.SecretData(ctx, ref, kubeconfigKey)
	if err == nil && live != nil && sha(live) == sha(data) {
		return true
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": kube.FieldManager, secretClusterLabel: m.Name.ValueString()}
	if err == nil {
		err = r.client.ApplySecret(ctx, ref, labels, map[string][]byte{kubeconfigKey: data})
	}
	if err != nil {
		diags.AddAttributeError(path.Root("kubeconfig_secret"), "Writing the kubeconfig Secret "+ref.String()+" failed", err.Error())
		return false
	}
	return true
}

// recordHash sets kubeconfig_sha256 in state from the live Secret.
func (r *multiKueueCluster) recordHash(ctx context.Context, state *tfsdk.State, diags *diag.Diagnostics) {
	if diags.HasError() || state.Raw.IsNull() || r.client == nil {
		return
	}
	var m multiKueueClusterModel
	if diags.Append(state.Get(ctx, &m)...); diags.HasError() {
		return
	}
	hash := types.StringNull()
	data, found, err := r.client.SecretData(ctx, m.secretRef(), kubeconfigKey)
	if err != nil {
		diags.AddAttributeError(path.Root("kubeconfig_secret"), "Reading the kubeconfig Secret "+m.secretRef().String()+" failed", err.Error())
		return
	}
	if found {
		hash = types.StringValue(sha(data))
	}
	diags.Append(state.SetAttribute(ctx, path.Root("kubeconfig_sha256"), hash)...)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
