// Command pulumi-tfgen-aiplatform writes the Pulumi schema, the bridge
// metadata and the SDKs from the provider's own schema and docs:
//
//	pulumi-tfgen-aiplatform schema --out cmd/pulumi-resource-aiplatform
//	pulumi-tfgen-aiplatform go --out ../sdk/go
//
// make pulumi-generate runs every step.
package main

import (
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/pf/tfgen"

	aiplatform "github.com/aiplatform/terraform-provider-aiplatform/pulumi"
)

var version = "0.0.0-dev"

func main() { tfgen.Main("aiplatform", aiplatform.Provider(version)) }
