package object

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Timeouts: the `timeouts` block of every object resource. Delete waits
// until the object is gone (finalizers: a ClusterQueue in use, a RayCluster's
// pods); a resource whose AfterApply waits for readiness also has create and
// update. An operation that runs out of time fails with what it waited for
// and what was still missing; what was applied is recorded in state.

// DefaultDeleteTimeout is how long a delete waits for the object to be gone
// unless timeouts.delete says otherwise.
const DefaultDeleteTimeout = 5 * time.Minute

// TimeoutsBlock is the block named "timeouts" of a resource whose apply
// waits up to apply by default (0: the apply does not wait) and whose delete
// waits up to del.
func TimeoutsBlock(ctx context.Context, kind string, apply, del time.Duration) schema.Block {
	opts := timeouts.Opts{
		Delete: true,
		DeleteDescription: fmt.Sprintf("How long a destroy waits until the %s is gone (finalizers included), "+
			"as a Go duration (`\"30s\"`, `\"10m\"`, `\"1h\"`). Default `%q`.", kind, Duration(del)),
	}
	if apply > 0 {
		opts.Create, opts.Update = true, true
		opts.CreateDescription = fmt.Sprintf("How long a create waits until the %s is ready, "+
			"as a Go duration. Default `%q`.", kind, Duration(apply))
		opts.UpdateDescription = fmt.Sprintf("How long an update waits until the %s is ready again, as a Go duration. "+
			"Default `%q`.", kind, Duration(apply))
	}
	b := timeouts.Block(ctx, opts).(schema.SingleNestedBlock)
	b.MarkdownDescription = "How long an operation waits for the cluster before it fails (see the guide " +
		"[Waiting for readiness: timeouts and progress](../guides/waiting-and-timeouts.md)). Not sent to the cluster."
	return b
}

// LegacyTimeout is the single `timeout` attribute that some resources had
// before their timeouts block (the installs, as helm_release has it, and the
// model deployment), default def (spelled as the states written before
// hold it). It still works — OperationTimeout uses it
// for an operation the timeouts block does not set — but is deprecated: its
// Default keeps every existing state as it is, so upgrading the provider
// plans no change. It is removed in 1.0.
func LegacyTimeout(def, what string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(def),
		MarkdownDescription: fmt.Sprintf("**Deprecated**: use the `timeouts` block. How long %s may take, as a Go duration, "+
			"for each operation the `timeouts` block does not set. Default `%q`.", what, def),
		DeprecationMessage: "Use the timeouts block instead (timeouts { create = \"…\", update = \"…\", delete = \"…\" }). " +
			"timeout still applies to every operation the block does not set, and is removed in 1.0.",
		Validators: []validator.String{validators.Duration(0, 0)}}
}

// OperationTimeout is how long operation op ("create", "update",
// "delete") may take: timeouts.<op> when the block sets it, else the
// deprecated `timeout` attribute (legacy; see LegacyTimeout) when it holds a
// duration, else def.
func OperationTimeout(ctx context.Context, t timeouts.Value, op string, legacy types.String, def time.Duration) (time.Duration, diag.Diagnostics) {
	if d, err := time.ParseDuration(legacy.ValueString()); err == nil && d > 0 {
		def = d
	}
	return TimeoutFor(ctx, t, op, def)
}

// TimeoutSet reports whether the timeouts block t sets operation op.
func TimeoutSet(t timeouts.Value, op string) bool {
	if t.IsNull() || t.IsUnknown() {
		return false
	}
	v, ok := t.Attributes()[op].(types.String)
	return ok && !v.IsNull()
}

// Duration spells d as a user writes it: "10m", "90s", "1h30m".
func Duration(d time.Duration) string {
	s := d.String()
	for _, z := range []struct{ long, short string }{{"m0s", "m"}, {"h0m", "h"}} {
		if len(s) > len(z.long) && s[len(s)-len(z.long):] == z.long {
			s = s[:len(s)-len(z.long)] + z.short
		}
	}
	return s
}

// TimeoutFor is the duration the operation ("create", "update" or "delete")
// may take under t, def when t does not set it.
func TimeoutFor(ctx context.Context, t timeouts.Value, op string, def time.Duration) (time.Duration, diag.Diagnostics) {
	if t.IsNull() || t.IsUnknown() {
		return def, nil
	}
	switch op {
	case "create":
		return t.Create(ctx, def)
	case "update":
		return t.Update(ctx, def)
	default:
		return t.Delete(ctx, def)
	}
}

type budgetKey struct{}

type budget struct {
	d  time.Duration
	op string
}

// WithBudget bounds ctx by d, the time operation op ("create", "update",
// "delete") may take, and remembers both for the message of a wait that runs
// out of it (Budget, TimeoutHint).
func WithBudget(ctx context.Context, op string, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, d)
	return context.WithValue(ctx, budgetKey{}, budget{d, op}), cancel
}

// Budget is the duration WithBudget bounded ctx by, def when none did.
func Budget(ctx context.Context, def time.Duration) time.Duration {
	if b, ok := ctx.Value(budgetKey{}).(budget); ok {
		return b.d
	}
	return def
}

// TimeoutHint is the sentence a timeout's error ends with: the timeouts
// attribute that gives the operation under way more time.
func TimeoutHint(ctx context.Context) string {
	op := "create"
	if b, ok := ctx.Value(budgetKey{}).(budget); ok {
		op = b.op
	}
	return fmt.Sprintf("Give it more time with `timeouts { %s = \"…\" }`.", op)
}

// timeoutsName is the block every object resource has.
const timeoutsName = "timeouts"

func (r *Resource[T, P]) deleteTimeout() time.Duration {
	if r.spec.DeleteTimeout > 0 {
		return r.spec.DeleteTimeout
	}
	return DefaultDeleteTimeout
}

// deleteError is a failed delete's message; when the delete ran out of
// time it says so, which finalizers still hold the object, and how to give
// it more time. (The object stays in state, so a later destroy retries.)
func (r *Resource[T, P]) deleteError(ctx context.Context, ref kube.Ref, err error) string {
	if !OutOfTime(ctx, err) {
		return err.Error()
	}
	held := "its finalizers could not be read"
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if live, found, gerr := r.client.Get(gctx, r.spec.Kind, ref); gerr == nil && found {
		var names []string
		fins, _ := Field(live.Object, "metadata", "finalizers").([]any)
		for _, f := range fins {
			names = append(names, fmt.Sprintf("%q", f))
		}
		held = "no finalizer is left (the API server has not removed it yet)"
		if len(names) > 0 {
			held = "finalizers still set: " + strings.Join(names, ", ") +
				" (each is removed by the controller that set it, often once nothing uses the object any more)"
		}
	}
	return fmt.Sprintf("%s %s is still present after %s (timeouts.delete); %s. It stays in state, so the next destroy "+
		"waits again. %s", r.spec.Kind.Kind, ref, Budget(ctx, 0), held, TimeoutHint(ctx))
}

// NullTimeouts is an unset timeouts block of a resource whose apply waits
// (withApply) or not, for a model built outside a plan or state.
func NullTimeouts(withApply bool) timeouts.Value {
	t := map[string]attr.Type{"delete": types.StringType}
	if withApply {
		t["create"], t["update"] = types.StringType, types.StringType
	}
	return timeouts.Value{Object: types.ObjectNull(t)}
}

// Explain is err's message, and when ctx ran out of the budget WithBudget
// gave it, which timeout that was and how to raise it.
func Explain(ctx context.Context, err error) string {
	if !OutOfTime(ctx, err) {
		return err.Error()
	}
	return fmt.Sprintf("%v — not done within %s (timeouts). What was deleted so far stays deleted and the resource stays in state, "+
		"so the next run continues. %s", err, Budget(ctx, 0), TimeoutHint(ctx))
}

// OutOfTime reports whether err ended a wait because ctx's deadline came or
// was about to: client-go's rate limiter refuses a request it could not send
// before the deadline ("rate: Wait(n=1) would exceed context deadline")
// while ctx itself has not ended yet.
func OutOfTime(ctx context.Context, err error) bool {
	return ctx.Err() != nil || err != nil && (errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "would exceed context deadline"))
}
