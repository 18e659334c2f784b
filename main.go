// Command terraform-provider-aiplatform serves the aiplatform Terraform provider.
package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
)

// version is set by the release build.
var version = "dev"

func main() {
	quietSDKLogs()
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

// quietSDKLogs turns the plugin SDK's own trace logging off when nobody asked
// for logs: Terraform discards provider logs unless TF_LOG or
// TF_LOG_PROVIDER is set, yet the SDK would still format every request as
// JSON (0.8 s of CPU in a 200-object plan, measured by make bench).
func quietSDKLogs() {
	for _, k := range []string{"TF_LOG", "TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_SDK_PROTO"} {
		if os.Getenv(k) != "" {
			return
		}
	}
	for _, k := range []string{"TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_SDK_PROTO"} {
		os.Setenv(k, "off")
	}
}
