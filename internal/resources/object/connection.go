package object

import "github.com/hashicorp/terraform-plugin-framework/diag"

// A resource has no client only when the provider's connection attributes
// were unknown when Terraform configured it (the cluster is created or
// replaced in the same configuration and Terraform cannot defer): the
// provider never falls back to another cluster then.
const notConnected = "The aiplatform provider's connection attributes are known only after apply (the cluster is created or " +
	"replaced in the same configuration), so no cluster is read or written in this run; the provider never falls back to " +
	"$KUBECONFIG or another cluster. "

// NotConnected reports a resource that has no client. A refresh (reading)
// keeps the recorded state and warns that it was not read; anything else is
// an error that says how to proceed.
func NotConnected(diags *diag.Diagnostics, reading bool) {
	if reading {
		diags.AddWarning("Not refreshed: no cluster connection yet", notConnected+
			"The recorded state is kept as it is; it is read from the cluster once the connection is known.")
		return
	}
	diags.AddError("No cluster connection yet", notConnected+
		"Apply what creates the cluster first (terraform apply -target=...), then apply again.")
}
