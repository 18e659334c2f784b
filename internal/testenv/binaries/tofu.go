package binaries

// OpenTofu is the tofu CLI, built from its source module like the
// controllers: the CLI scenarios (internal/acctest) run under Terraform and
// under OpenTofu. version.dev=no stamps a release build ("1.10.6", not
// "1.10.6-dev"), which is what `tofu version` and required_version checks see.
var OpenTofu = Spec{
	Name:      "tofu",
	Version:   OpenTofuVersion,
	Module:    OpenTofuModule,
	Package:   "./cmd/tofu",
	LDFlags:   "-X " + OpenTofuModule + "/version.dev=no",
	ColdBuild: "~8 min",
}

const (
	OpenTofuModule  = "github.com/opentofu/opentofu"
	OpenTofuVersion = "v1.10.6"
)
