package binaries

// PulumiCLI is the pulumi CLI, and beside it the YAML language host that runs
// the Pulumi programs of examples/pulumi, built by one `go build` in
// tools/clis (whose go.mod pins these versions; TestPulumiVersionsPinned
// holds the two together). Only the Pulumi tests use them.
var PulumiCLI = Spec{
	Name:      "pulumi",
	Version:   PulumiVersion,
	Module:    PulumiModule,
	Dir:       CLIs,
	Package:   PulumiModule + "/cmd/pulumi",
	LDFlags:   "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=" + PulumiVersion + " -X " + PulumiYAMLModule + "/pkg/version.Version=" + PulumiYAMLVersion,
	ColdBuild: "~6 min",
	BuildsAlso: []Spec{{
		Name:    "pulumi-language-yaml",
		Version: PulumiYAMLVersion,
		Module:  PulumiYAMLModule,
		Dir:     CLIs,
		Package: PulumiYAMLModule + "/cmd/pulumi-language-yaml",
	}},
}

const (
	PulumiModule      = "github.com/pulumi/pulumi/pkg/v3"
	PulumiVersion     = "v3.256.0"
	PulumiYAMLModule  = "github.com/pulumi/pulumi-yaml"
	PulumiYAMLVersion = "v1.38.1"
)
