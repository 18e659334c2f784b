// Package kueue holds the resources for Kueue's API objects, one file each.
// Kueue's kinds, conversions and labels are stated in internal/catalog.
package kueue

import "github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"

const group = catalog.KueueGroup

var (
	resourceFlavorKind            = catalog.KueueResourceFlavor
	workloadPriorityClassKind     = catalog.KueueWorkloadPriorityClass
	clusterQueueKind              = catalog.KueueClusterQueue
	localQueueKind                = catalog.KueueLocalQueue
	cohortKind                    = catalog.KueueCohort
	topologyKind                  = catalog.KueueTopology
	admissionCheckKind            = catalog.KueueAdmissionCheck
	provisioningRequestConfigKind = catalog.KueueProvisioningRequestConfig
)
