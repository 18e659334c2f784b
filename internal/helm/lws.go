package helm

import "github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"

// LWS is the LeaderWorkerSet controller's chart (catalog.LWS). Its settings
// are the user's values alone: no typed configuration.
var LWS = chartOf(catalog.LWS)
