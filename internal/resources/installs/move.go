package installs

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Adoption from hashicorp/helm: a `moved { from = helm_release.x to =
// aiplatform_<install>.y }` block hands this resource the release's state.
// The move records only which release it is (namespace/name, as an import
// does); Terraform's refresh then reads the installed release — chart
// version, values into the typed attributes — on the import path of Read,
// so the release is not upgraded, reinstalled or written by the move.

var _ resource.ResourceWithMoveState = (*releaseResource[kueueModel, *kueueModel])(nil)

// sourceHelm is the provider whose helm_release resources can be moved.
const sourceHelm = "hashicorp/helm"

func (r *releaseResource[T, P]) MoveState(context.Context) []resource.StateMover {
	return []resource.StateMover{{StateMover: func(ctx context.Context, req resource.MoveStateRequest, resp *resource.MoveStateResponse) {
		if req.SourceTypeName != "helm_release" || !object.FromProvider(req.SourceProviderAddress, sourceHelm) {
			return // not ours: the framework reports that nothing could move it
		}
		ref, diags := releaseRef(req.SourceRawState, r.spec.Chart.Default.Name, r.spec.Chart.Product)
		if resp.Diagnostics.Append(diags...); diags.HasError() {
			return
		}
		resp.Diagnostics.Append(object.SetRef(ctx, &resp.TargetState, ref, true)...)
		if c := chartFrom(req.SourceRawState, r.spec.Chart.Default); c != nil {
			resp.Diagnostics.Append(resp.TargetState.SetAttribute(ctx, tfpath.Root("chart"), c)...)
		}
	}}}
}

// helmReleaseState is the part of a helm_release state the move reads.
// metadata is a list of one object in hashicorp/helm v2 and an object in v3.
type helmReleaseState struct {
	Name       string          `json:"name"`
	Namespace  string          `json:"namespace"`
	Chart      string          `json:"chart"`
	Repository string          `json:"repository"`
	Metadata   json.RawMessage `json:"metadata"`
}

// versionSuffix is a chart archive's or directory's "-1.2.3" suffix.
var versionSuffix = regexp.MustCompile(`-v?[0-9]+\.[0-9]+\.[0-9]+.*$`)

// releaseRef reads namespace/name of a helm_release state and checks that
// it installed the chart named want (the installed chart's name from the
// release metadata, else the last element of `chart` without ".tgz" and
// version).
func releaseRef(raw *tfprotov6.RawState, want, product string) (kube.Ref, diag.Diagnostics) {
	var diags diag.Diagnostics
	fail := func(detail string) (kube.Ref, diag.Diagnostics) {
		diags.AddError("Cannot move helm_release to this resource", detail)
		return kube.Ref{}, diags
	}
	if raw == nil || len(raw.JSON) == 0 {
		return fail("The source state is empty (only states written as JSON, Terraform ≥ 0.12, can be moved).")
	}
	var s helmReleaseState
	if err := json.Unmarshal(raw.JSON, &s); err != nil {
		return fail("The source state is not a helm_release state: " + err.Error())
	}
	if s.Name == "" {
		return fail("The helm_release state has no name.")
	}
	if s.Namespace == "" {
		s.Namespace = "default" // helm_release's default
	}
	got := metadataChart(s.Metadata)
	if got == "" {
		got = versionSuffix.ReplaceAllString(strings.TrimSuffix(path.Base(s.Chart), ".tgz"), "")
	}
	if got != want {
		return fail(fmt.Sprintf("helm_release %q installed chart %q (%s); this resource manages the %s chart %q. Move it to the aiplatform resource of that chart, or keep it in hashicorp/helm.",
			s.Name, got, s.Chart, product, want))
	}
	return kube.Ref{Namespace: s.Namespace, Name: s.Name}, diags
}

func metadataChart(b json.RawMessage) string {
	var one struct {
		Chart string `json:"chart"`
	}
	if json.Unmarshal(b, &one) == nil && one.Chart != "" {
		return one.Chart
	}
	var list []struct {
		Chart string `json:"chart"`
	}
	if json.Unmarshal(b, &list) == nil && len(list) > 0 {
		return list[0].Chart
	}
	return ""
}

// chartFrom is where the helm_release took its chart from, as this
// resource's `chart` says it — nil when it is the resource's default source
// (a configuration that leaves `chart` out): `repository` and `chart`, an
// `oci://…/name` reference, or a local path.
func chartFrom(raw *tfprotov6.RawState, def helm.Source) *chartModel {
	var s helmReleaseState
	if raw == nil || json.Unmarshal(raw.JSON, &s) != nil || s.Chart == "" {
		return nil
	}
	repo, name := s.Repository, s.Chart
	switch {
	case repo != "":
	case strings.HasPrefix(name, "oci://"):
		repo, name = path.Dir(name), path.Base(name)
		repo = strings.Replace(repo, "oci:/", "oci://", 1) // path.Dir collapses the double slash
	default:
		return &chartModel{Repository: types.StringNull(), Name: types.StringNull(), Path: types.StringValue(name)}
	}
	if strings.TrimSuffix(repo, "/") == strings.TrimSuffix(def.Repository, "/") && name == def.Name {
		return nil
	}
	return &chartModel{Repository: types.StringValue(repo), Name: types.StringValue(name), Path: types.StringNull()}
}
