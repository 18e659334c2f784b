package object

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// acceptAttribute is the attribute every object resource has for the live
// changes its plan may make beyond its own attributes.
const acceptAttribute = "accept_live_changes"

func acceptSchema() schema.Attribute {
	return schema.ListAttribute{
		Optional:    true,
		ElementType: types.StringType,
		MarkdownDescription: "Live fields an apply may change or remove although the plan's attribute changes do not show them. " +
			"Every plan that updates an existing object dry-runs the apply and compares the result with the live object; " +
			"a change to a field that no planned attribute change writes (for example the volumes of an atomic list " +
			"taken over with `force_conflicts`, a field another field manager added, or a value the live object holds " +
			"that the resource's attributes cannot express) is refused unless a path listed here is the changed field " +
			"or above it. Paths are written as the plan's warning names them, " +
			"e.g. `spec.workerGroupSpecs[\"groupName=gpu\"].template.spec.volumes`; `[*]` stands for any one element " +
			"or key. Accepted changes are still shown as a warning.",
		Validators: []validator.List{listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
	}
}

// LiveChanges is embedded in the model of every object resource: the
// accept_live_changes attribute and the timeouts block the generic path adds
// to its schema.
type LiveChanges struct {
	AcceptLiveChanges types.List     `tfsdk:"accept_live_changes"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
}

func (l *LiveChanges) acceptedLiveChanges() types.List { return l.AcceptLiveChanges }
func (l *LiveChanges) waitTimeouts() timeouts.Value    { return l.Timeouts }

// accepted is the model's accept_live_changes.
func accepted(ctx context.Context, l types.List) []string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []string
	_ = l.ElementsAs(ctx, &out, false)
	return out
}

// previewLive shows, in the plan, what applying m would change in the live
// object beyond the resource's attributes, and refuses it unless accepted.
// It runs only for an existing object whose configuration is known and
// whose plan differs from state (an unchanged plan applies nothing): one GET
// and one dry-run apply — two when the apply would conflict.
func (r *Resource[T, P]) previewLive(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, m *T) {
	if r.client == nil || req.State.Raw.IsNull() || !req.Config.Raw.IsFullyKnown() {
		return
	}
	if sameExceptUnknown(resp.Plan.Raw, req.State.Raw) {
		return // nothing to apply
	}
	var prior T
	if d := req.State.Get(ctx, &prior); d.HasError() {
		return
	}
	ref := P(m).ObjectRef()
	mc := *m // BeforeApply may adjust the model; the plan keeps it as planned
	fields, force, err := r.toApply(ctx, &mc)
	if err != nil {
		resp.Diagnostics.AddWarning(fmt.Sprintf("Cannot preview the apply of %s %s", r.spec.Kind.Kind, ref), err.Error())
		return
	}
	obj := kube.NewObject(r.spec.Kind, ref, fields)
	// What the plan shows changing: the fields where the object the prior
	// state writes and the planned one differ. Any other live change — a
	// field beyond the attributes, or one an attribute writes but its state
	// did not reflect — is one the plan would not show.
	managed := kube.ChangedPaths(kube.NewObject(r.spec.Kind, P(&prior).ObjectRef(), r.spec.Fields(&prior)).Object, obj.Object)
	p, err := r.client.PreviewApply(ctx, r.spec.Kind, obj, force, managed)
	if err != nil {
		resp.Diagnostics.AddWarning(fmt.Sprintf("Cannot preview the apply of %s %s", r.spec.Kind.Kind, ref),
			"The dry run of the apply failed, so the plan cannot show what it would change beyond this resource's attributes: "+err.Error())
		return
	}
	if p.Forced() && !force {
		// A warning, not an error: the plan still shows the repair (so
		// `plan -detailed-exitcode` reports the drift with exit code 2, and
		// a destroy, whose refresh plans the configuration first, is not
		// blocked by a field someone else edited). The apply itself is not
		// forced, so the API server refuses it and nothing changes: the
		// plan never hides a change the apply would make.
		resp.Diagnostics.AddWarning(fmt.Sprintf("Applying %s %s would conflict with another field manager", r.spec.Kind.Kind, ref),
			p.ConflictText()+"\nThe apply will fail with this conflict and change nothing. Remove those fields from the configuration, "+
				"have the other manager release them, or, if every change above is intended, set force_conflicts = true in the provider block"+
				acceptHint(p)+".")
		return
	}
	if len(p.Unmanaged) == 0 {
		return
	}
	accept := accepted(ctx, P(m).acceptedLiveChanges())
	var refused []string
	for i, ch := range p.Unmanaged {
		if !kube.Covered(ch.Path, accept) {
			refused = append(refused, p.Lines()[i])
		}
	}
	what := "This apply"
	if p.Forced() {
		what = "This forced apply (force_conflicts)"
	}
	if len(refused) == 0 {
		resp.Diagnostics.AddAttributeWarning(path.Root(acceptAttribute), fmt.Sprintf("Applying %s %s changes live fields its plan does not show", r.spec.Kind.Kind, ref),
			what+" changes, as accept_live_changes allows:\n  "+strings.Join(p.Lines(), "\n  "))
		return
	}
	resp.Diagnostics.AddAttributeError(path.Root(acceptAttribute), fmt.Sprintf("Applying %s %s would change live fields its plan does not show", r.spec.Kind.Kind, ref),
		what+" would change fields of the live object that the plan's attribute changes do not show:\n  "+strings.Join(refused, "\n  ")+
			"\nPut them in the configuration, or list their paths in accept_live_changes to accept the change.")
}

func acceptHint(p kube.Preview) string {
	if len(p.Unmanaged) == 0 {
		return ""
	}
	return " and list the changed paths in accept_live_changes"
}
