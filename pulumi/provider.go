// Package pulumi serves the aiplatform Terraform provider to Pulumi through
// the Pulumi Terraform bridge: the same framework provider, its plan-time
// checks and live diffs, under Pulumi tokens.
//
// Every resource and data source lives in the one module "index"
// (aiplatform:index:ClusterQueue). The Terraform names are flat
// (aiplatform_cluster_queue), so one module keeps the mapping mechanical:
// a new resource needs no entry here, and no token moves when a resource's
// Go package does. Per-area modules would need a hand-kept table.
package pulumi

import (
	_ "embed"

	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/pf/tfbridge"
	bridge "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge/tokens"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
)

// Paths of the generated SDKs (sdk/, a Go module of its own).
const (
	SDKModule   = "github.com/aiplatform/terraform-provider-aiplatform/sdk"
	GoImport    = SDKModule + "/go/aiplatform"
	NodePackage = "@aiplatform/pulumi-aiplatform"
	PyPackage   = "pulumi_aiplatform"
)

// metadata is what tfgen learnt of the provider (bridge-metadata.json,
// written beside schema.json and committed with it).
//
//go:embed cmd/pulumi-resource-aiplatform/bridge-metadata.json
var metadata []byte

// Provider is the bridge's description of the provider. version is a
// semantic version: Pulumi refuses "dev".
func Provider(version string) bridge.ProviderInfo {
	p := bridge.ProviderInfo{
		P:                 tfbridge.ShimProvider(provider.New(version)()),
		Name:              "aiplatform",
		Version:           version,
		DisplayName:       "AI Platform",
		Publisher:         "aiplatform",
		Description:       "A shared GPU platform on Kubernetes: Kueue quotas that follow the GPUs the nodes have, training and serving controllers, checkpoint stores and plan-time checks",
		Keywords:          []string{"kubernetes", "kueue", "gpu", "training", "serving", "category/infrastructure"},
		License:           "MPL-2.0",
		Homepage:          "https://github.com/aiplatform/terraform-provider-aiplatform",
		Repository:        "https://github.com/aiplatform/terraform-provider-aiplatform",
		GitHubOrg:         "aiplatform",
		UpstreamRepoPath:  "..",
		MetadataInfo:      bridge.NewProviderMetadata(metadata),
		TFProviderVersion: version,
		Golang: &bridge.GolangInfo{
			ImportBasePath:                 GoImport,
			GenerateResourceContainerTypes: true,
		},
		JavaScript: &bridge.JavaScriptInfo{PackageName: NodePackage},
		Python:     &bridge.PythonInfo{PackageName: PyPackage},
	}
	p.MustComputeTokens(tokens.SingleModule("aiplatform_", "index", tokens.MakeStandard("aiplatform")))
	return p
}
