package installs

import (
	"context"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// A changed namespace (or release name) replaces an install: the new one
// is created before the old one is destroyed, so its conflict rules must
// not hold the old one, still live, against it (helm.Install.Replaces).
// Terraform plans a replacement twice, the second time as a create without
// the prior state, so the first plan remembers it for the second. The
// install engine (install.go) asks here for every install, whatever its
// back end.

// replacement is a planned install's ID ("namespace/name") in one provider
// run (its client).
type replacement struct {
	client *kube.Client
	id     string
}

// replacements maps a replacement to the ID of the install it replaces.
var replacements sync.Map

// replacedID returns the ID of the install the plan of id replaces, "" for
// none. name is the install's fixed name, or "" when the state has a name
// attribute.
func replacedID(ctx context.Context, c *kube.Client, state tfsdk.State, id, name string) (string, diag.Diagnostics) {
	var diags diag.Diagnostics
	key := replacement{c, id}
	if state.Raw.IsNull() {
		if old, ok := replacements.Load(key); ok {
			return old.(string), diags
		}
		return "", diags
	}
	var ns, n types.String
	diags.Append(state.GetAttribute(ctx, path.Root("namespace"), &ns)...)
	if name == "" {
		diags.Append(state.GetAttribute(ctx, path.Root("name"), &n)...)
		name = n.ValueString()
	}
	prior := ns.ValueString() + "/" + name
	if diags.HasError() || prior == id {
		return "", diags
	}
	replacements.Store(key, prior)
	return prior, diags
}
