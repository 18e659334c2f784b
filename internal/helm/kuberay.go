package helm

import "github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"

// KubeRay is the KubeRay operator's chart (catalog.KubeRay). Its settings
// are the user's values alone: no typed configuration.
var KubeRay = chartOf(catalog.KubeRay)
