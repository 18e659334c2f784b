// Command terraform-provider-aiplatform serves the aiplatform Terraform provider.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
)

// version is set by the release build.
var version = "dev"

func main() {
	telemetry.QuietSDKLogs()
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run with support for debuggers like delve")
	flag.Parse()
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/aiplatform/aiplatform",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
