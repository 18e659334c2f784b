// Package provider is the aiplatform provider: its configuration (how to reach
// the cluster, the same attributes as the hashicorp/kubernetes provider, in
// config.go) and the registry of resources and data sources.
package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/gpu"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/installs"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/kueue"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/migration"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/serving"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/training"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/volcano"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
)

// New returns the provider factory for providerserver. It starts the
// provider's profiling when AIPLATFORM_PROFILE asks for it.
func New(version string) func() provider.Provider {
	telemetry.StartProfiling()
	return func() provider.Provider { return &aiplatform{version: version} }
}

type aiplatform struct{ version string }

func (p *aiplatform) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "aiplatform"
	resp.Version = p.version
}

func (p *aiplatform) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		gpu.NewNodePool,
		kueue.NewResourceFlavor,
		kueue.NewWorkloadPriorityClass,
		kueue.NewClusterQueue,
		kueue.NewLocalQueue,
		kueue.NewCohort,
		kueue.NewTopology,
		kueue.NewAdmissionCheck,
		kueue.NewProvisioningRequestConfig,
		kueue.NewMultiKueueConfig,
		kueue.NewMultiKueueCluster,
		modelcache.NewModelCache,
		installs.NewKueue,
		installs.NewVolcano,
		installs.NewKubeRayOperator,
		installs.NewLWSController,
		installs.NewJobSetController,
		installs.NewTrainer,
		installs.NewMPIOperator,
		installs.NewKServe,
		volcano.NewQueue,
		serving.NewRayCluster,
		serving.NewRayService,
		serving.NewLWSGroup,
		serving.NewModelDeployment,
		serving.NewInferencePool,
		serving.NewServingRuntime,
		serving.NewLLMServicePreset,
		training.NewNCCLCheck,
		training.NewCheckpointStore,
		training.NewTrainingRuntime,
		migration.NewStorageVersionMigration,
	}
}

func (p *aiplatform) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		gpu.NewCapacityDataSource,
		serving.NewInferenceSizingDataSource,
	}
}
