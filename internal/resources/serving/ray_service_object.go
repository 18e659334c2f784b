package serving

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// The RayService's fields both ways. Its rayClusterConfig is a RayCluster's
// spec: it is written and read by the RayCluster's own mapping
// (rayClusterFields, readRayCluster) through asCluster, so the head, the
// worker groups and their pod templates mean the same in both resources.

// asCluster is the RayCluster model of the service's rayClusterConfig: no
// queue, never suspended.
func (m *rayServiceModel) asCluster() *rayClusterModel {
	return &rayClusterModel{
		NamespacedMeta: m.NamespacedMeta,
		rayClusterSpec: m.rayClusterSpec,
		QueueName:      types.StringNull(),
		Suspend:        types.BoolNull(),
		WaitForReady:   m.WaitForReady,
	}
}

// rayAsCluster wraps a RayService's rayClusterConfig as a RayCluster object
// (the same maps, so changes to it change the service's).
func rayAsCluster(service map[string]any) map[string]any {
	cfg := object.Fields(service, "spec", "rayClusterConfig")
	if cfg == nil {
		return nil
	}
	return map[string]any{"spec": cfg}
}

// ---- model → object -------------------------------------------------------

func rayServiceFields(m *rayServiceModel) map[string]any {
	spec := map[string]any{
		"rayClusterConfig": object.Fields(rayClusterFields(m.asCluster()), "spec"),
		"serveConfigV2":    m.ServeConfig.ValueString(),
	}
	if u := m.UpgradeStrategy; u != nil {
		us := map[string]any{}
		object.Put(us, "type", u.Type)
		opts := map[string]any{}
		object.Put(opts, "maxSurgePercent", u.MaxSurgePercent)
		object.Put(opts, "stepSizePercent", u.StepSizePercent)
		object.Put(opts, "intervalSeconds", u.IntervalSeconds)
		object.Put(opts, "gatewayClassName", u.GatewayClassName)
		if len(opts) > 0 {
			us["clusterUpgradeOptions"] = opts
		}
		spec["upgradeStrategy"] = us
	}
	object.Put(spec, "rayClusterDeletionDelaySeconds", m.ClusterDeletionDelay)
	object.Put(spec, "excludeHeadPodFromServeSvc", m.ExcludeHeadFromServe)
	fields := map[string]any{"spec": spec}
	if object.Known(m.InitializingTimeout) {
		fields["metadata"] = map[string]any{"annotations": map[string]any{rayInitializingTimeoutAnnotation: m.InitializingTimeout.ValueString()}}
	}
	return fields
}

// beforeApplyRayService keeps the live spellings of the cluster config, as
// for a RayCluster (rayKeepLive). Unlike a RayCluster's, the service's
// worker replicas are never changed by the autoscaler (it scales the
// RayCluster KubeRay made), so nothing is forced.
func beforeApplyRayService(_ context.Context, _ *rayServiceModel, fields map[string]any, read func() (map[string]any, error)) (bool, error) {
	live, err := read()
	if err != nil || live == nil {
		return false, err
	}
	if lc := rayAsCluster(live); lc != nil {
		rayKeepLive(rayAsCluster(fields), lc)
	}
	return false, nil
}

// ---- object → model -------------------------------------------------------

// readRayService reads the live RayService into m, which holds the prior
// state (everything null on import).
func readRayService(live map[string]any, m *rayServiceModel) {
	spec := object.Fields(live, "spec")
	name, _ := object.Field(live, "metadata", "name").(string)
	ns, _ := object.Field(live, "metadata", "namespace").(string)

	c := m.asCluster()
	cfg := rayCopy(object.Fields(spec, "rayClusterConfig"))
	if cfg == nil {
		cfg = map[string]any{}
	}
	delete(cfg, "suspend") // no attribute here
	readRayCluster(map[string]any{"metadata": map[string]any{"name": name, "namespace": ns}, "spec": cfg}, c)
	m.rayClusterSpec = c.rayClusterSpec
	m.HeadServiceName = c.HeadServiceName
	m.DashboardAddress = c.DashboardAddress

	m.ServeConfig = object.String(spec["serveConfigV2"], m.ServeConfig)
	m.UpgradeStrategy = readRayUpgrade(object.Fields(spec, "upgradeStrategy"), m.UpgradeStrategy)
	m.ClusterDeletionDelay = object.Int64(spec["rayClusterDeletionDelaySeconds"])
	if v, has := spec["excludeHeadPodFromServeSvc"]; has || !m.ExcludeHeadFromServe.IsNull() {
		m.ExcludeHeadFromServe = types.BoolValue(v == true)
	}
	m.InitializingTimeout = object.String(object.Field(live, "metadata", "annotations", rayInitializingTimeoutAnnotation), m.InitializingTimeout)
	if m.WaitForReady.IsNull() {
		m.WaitForReady = types.BoolValue(true) // import: the default
	}

	m.ServeServiceName = types.StringValue(name + "-serve-svc")
	status := object.Fields(live, "status")
	active, _ := object.Field(status, "activeServiceStatus", "rayClusterName").(string)
	pending, _ := object.Field(status, "pendingServiceStatus", "rayClusterName").(string)
	m.ActiveClusterName = types.StringValue(active)
	m.PendingClusterName = types.StringValue(pending)
	m.ApplicationNames = rayApplicationNames(m.ServeConfig)
}

// readRayUpgrade reads spec.upgradeStrategy; maxSurgePercent at the CRD's
// default is not shown when it was not written.
func readRayUpgrade(live map[string]any, prior *rayUpgradeStrategy) *rayUpgradeStrategy {
	if live == nil {
		return nil
	}
	var p rayUpgradeStrategy
	if prior != nil {
		p = *prior
	}
	opts := object.Fields(live, "clusterUpgradeOptions")
	u := &rayUpgradeStrategy{
		Type:             object.String(live["type"], p.Type),
		MaxSurgePercent:  object.Int64(opts["maxSurgePercent"]),
		StepSizePercent:  object.Int64(opts["stepSizePercent"]),
		IntervalSeconds:  object.Int64(opts["intervalSeconds"]),
		GatewayClassName: object.String(opts["gatewayClassName"], p.GatewayClassName),
	}
	if p.MaxSurgePercent.IsNull() && u.MaxSurgePercent.ValueInt64() == kuberayMaxSurgeDefault {
		u.MaxSurgePercent = types.Int64Null()
	}
	return u
}

// ---- import ---------------------------------------------------------------

// rayServiceUnexpressed lists the paths where the live RayService's spec
// differs from what an apply of m would send, leaving out what KubeRay's CRD
// defaults (see rayUnexpressed).
func rayServiceUnexpressed(live map[string]any, m *rayServiceModel) []string {
	fields := rayServiceFields(m)
	if lc := rayAsCluster(live); lc != nil {
		rayKeepLive(rayAsCluster(fields), lc)
	}
	want := rayCopy(object.Fields(fields, "spec"))
	have := rayCopy(object.Fields(live, "spec"))
	if have == nil || want == nil {
		return nil
	}
	rayDropGroupDefaults(object.Fields(want, "rayClusterConfig"), object.Fields(have, "rayClusterConfig"))
	if opts := object.Fields(have, "upgradeStrategy", "clusterUpgradeOptions"); opts != nil {
		if _, set := object.Fields(want, "upgradeStrategy", "clusterUpgradeOptions")["maxSurgePercent"]; !set &&
			object.Int64(opts["maxSurgePercent"]).ValueInt64() == kuberayMaxSurgeDefault {
			delete(opts, "maxSurgePercent")
		}
	}
	return kube.ChangedPaths(map[string]any{"spec": have}, map[string]any{"spec": want})
}
