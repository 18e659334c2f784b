package helm

import (
	"maps"
	"regexp"
	"strconv"
)

// The manager configuration sections platform teams set beyond the
// integrations (Kueue's config.kueue.x-k8s.io/v1beta2 Configuration, as of
// v0.19): WaitForPodsReady's requeuing, fair sharing, admission fair
// sharing, MultiKueue. Each section the configuration sets replaces that
// section of the manager configuration document; nil leaves the document's.
// Topology-aware scheduling has no section: it is feature gates
// (TopologyAwareScheduling, TASMultiLayerTopology, …).

// KueueRequeuing is waitForPodsReady.requeuingStrategy.
type KueueRequeuing struct {
	// Timestamp is "Eviction" or "Creation".
	Timestamp                                                string
	BackoffLimitCount, BackoffBaseSeconds, BackoffMaxSeconds *int64
}

// KueueFairSharing is fairSharing: fair sharing among the ClusterQueues of
// a cohort, on by its presence.
type KueueFairSharing struct {
	// PreemptionStrategies: LessThanOrEqualToFinalShare, LessThanInitialShare.
	PreemptionStrategies []string
}

// KueueAdmissionFairSharing is admissionFairSharing: LocalQueues of a
// ClusterQueue ordered by their recent usage (feature gate
// AdmissionFairSharing).
type KueueAdmissionFairSharing struct {
	UsageHalfLifeTime, UsageSamplingInterval string
	ResourceWeights                          map[string]float64
}

// KueueMultiKueue is multiKueue: the manager side of MultiKueue.
type KueueMultiKueue struct {
	GCInterval, Origin, WorkerLostTimeout string
	// DispatcherName: kueue.x-k8s.io/multikueue-dispatcher-all-at-once or
	// kueue.x-k8s.io/multikueue-dispatcher-incremental.
	DispatcherName string
	// IncrementalStepSize is incrementalDispatcherConfig.stepSize (v0.19).
	IncrementalStepSize *int64
}

// DisableWaitForPodsReadyGate is the feature gate that turns
// WaitForPodsReady off in Kueue v0.19 and later, where it is on by default
// (removing the waitForPodsReady section no longer turns it off).
const DisableWaitForPodsReadyGate = "DisableWaitForPodsReady"

// WaitForPodsReadyByDefault is the first Kueue minor version (0.x) that
// waits for pods ready without a waitForPodsReady section.
const WaitForPodsReadyByDefault = 19

var kueueTagMinor = regexp.MustCompile(`(?:^|[^0-9])0\.([0-9]+)(?:$|[^0-9])`)

// KueueMinor is the minor version of the Kueue manager the values run: the
// image tag controllerManager.manager.image.tag of the first values that set
// one ("release-0.19", "v0.19.2"), else the appVersion given; 0 when none
// names a 0.x version.
func KueueMinor(appVersion string, values ...map[string]any) int {
	tags := []string{}
	for _, v := range values {
		if tag, ok := GetPath(v, "controllerManager", "manager", "image", "tag").(string); ok && tag != "" {
			tags = append(tags, tag)
			break
		}
	}
	tags = append(tags, appVersion)
	for _, tag := range tags {
		if m := kueueTagMinor.FindStringSubmatch(tag); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return 0
}

// writeSections writes the typed sections into a manager configuration.
func (c KueueConfig) writeSections(cfg map[string]any) {
	if w := c.WaitForPodsReady; w != nil && w.Enable {
		wr, _ := cfg["waitForPodsReady"].(map[string]any)
		if w.BlockAdmission != nil {
			wr["blockAdmission"] = *w.BlockAdmission
		}
		if w.RecoveryTimeout != "" {
			wr["recoveryTimeout"] = w.RecoveryTimeout
		}
		if r := w.Requeuing; r != nil {
			rs := map[string]any{}
			setString(rs, "timestamp", r.Timestamp)
			setInt(rs, "backoffLimitCount", r.BackoffLimitCount)
			setInt(rs, "backoffBaseSeconds", r.BackoffBaseSeconds)
			setInt(rs, "backoffMaxSeconds", r.BackoffMaxSeconds)
			wr["requeuingStrategy"] = rs
		}
	}
	if f := c.FairSharing; f != nil {
		strategies := make([]any, len(f.PreemptionStrategies))
		for i, s := range f.PreemptionStrategies {
			strategies[i] = s
		}
		fs := map[string]any{}
		if len(strategies) > 0 {
			fs["preemptionStrategies"] = strategies
		}
		if v, _ := cfg["apiVersion"].(string); v == "config.kueue.x-k8s.io/v1beta1" {
			fs["enable"] = true
		}
		cfg["fairSharing"] = fs
	}
	if a := c.AdmissionFairSharing; a != nil {
		afs := map[string]any{}
		setString(afs, "usageHalfLifeTime", a.UsageHalfLifeTime)
		setString(afs, "usageSamplingInterval", a.UsageSamplingInterval)
		if len(a.ResourceWeights) > 0 {
			weights := map[string]any{}
			for k, v := range a.ResourceWeights {
				weights[k] = v
			}
			afs["resourceWeights"] = weights
		}
		cfg["admissionFairSharing"] = afs
	}
	if m := c.MultiKueue; m != nil {
		mk := map[string]any{}
		setString(mk, "gcInterval", m.GCInterval)
		setString(mk, "origin", m.Origin)
		setString(mk, "workerLostTimeout", m.WorkerLostTimeout)
		setString(mk, "dispatcherName", m.DispatcherName)
		if m.IncrementalStepSize != nil {
			mk["incrementalDispatcherConfig"] = map[string]any{"stepSize": *m.IncrementalStepSize}
		}
		cfg["multiKueue"] = mk
	}
}

// readSections reads the typed sections back from a manager configuration
// (import).
func (c *KueueConfig) readSections(cfg map[string]any) {
	if w := c.WaitForPodsReady; w != nil && w.Enable {
		wr, _ := cfg["waitForPodsReady"].(map[string]any)
		if b, ok := wr["blockAdmission"].(bool); ok {
			w.BlockAdmission = &b
		}
		w.RecoveryTimeout, _ = wr["recoveryTimeout"].(string)
		if rs, ok := wr["requeuingStrategy"].(map[string]any); ok {
			r := &KueueRequeuing{BackoffLimitCount: getInt(rs, "backoffLimitCount"),
				BackoffBaseSeconds: getInt(rs, "backoffBaseSeconds"), BackoffMaxSeconds: getInt(rs, "backoffMaxSeconds")}
			r.Timestamp, _ = rs["timestamp"].(string)
			w.Requeuing = r
		}
	}
	if fs, ok := cfg["fairSharing"].(map[string]any); ok && fs["enable"] != false {
		f := &KueueFairSharing{}
		for _, s := range asSlice(fs["preemptionStrategies"]) {
			if str, ok := s.(string); ok {
				f.PreemptionStrategies = append(f.PreemptionStrategies, str)
			}
		}
		c.FairSharing = f
	}
	if afs, ok := cfg["admissionFairSharing"].(map[string]any); ok {
		a := &KueueAdmissionFairSharing{}
		a.UsageHalfLifeTime, _ = afs["usageHalfLifeTime"].(string)
		a.UsageSamplingInterval, _ = afs["usageSamplingInterval"].(string)
		if weights, ok := afs["resourceWeights"].(map[string]any); ok && len(weights) > 0 {
			a.ResourceWeights = map[string]float64{}
			for k, v := range weights {
				if f, ok := v.(float64); ok {
					a.ResourceWeights[k] = f
				}
			}
		}
		c.AdmissionFairSharing = a
	}
	if mk, ok := cfg["multiKueue"].(map[string]any); ok {
		m := &KueueMultiKueue{}
		m.GCInterval, _ = mk["gcInterval"].(string)
		m.Origin, _ = mk["origin"].(string)
		m.WorkerLostTimeout, _ = mk["workerLostTimeout"].(string)
		m.DispatcherName, _ = mk["dispatcherName"].(string)
		if inc, ok := mk["incrementalDispatcherConfig"].(map[string]any); ok {
			m.IncrementalStepSize = getInt(inc, "stepSize")
		}
		c.MultiKueue = m
	}
}

// featureGates are the gates to write (controllerManager.featureGates): the
// configuration's, plus DisableWaitForPodsReady when WaitForPodsReady is
// turned off on a Kueue that waits by default (v0.19+). nil leaves the
// chart's.
func (c KueueConfig) featureGates(current map[string]any, minor int) map[string]bool {
	gates := c.FeatureGates
	if w := c.WaitForPodsReady; w != nil && !w.Enable && minor >= WaitForPodsReadyByDefault {
		if gates == nil {
			gates = parseFeatureGates(GetPath(current, kueueFeatureGatesPath...))
		}
		gates = maps.Clone(gates)
		if gates == nil {
			gates = map[string]bool{}
		}
		gates[DisableWaitForPodsReadyGate] = true
	}
	return gates
}

// parseFeatureGates reads the chart's controllerManager.featureGates list
// ({name, enabled} items); nil when there is none.
func parseFeatureGates(v any) map[string]bool {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, g := range list {
		gm, _ := g.(map[string]any)
		name, _ := gm["name"].(string)
		on, _ := gm["enabled"].(bool)
		if name != "" {
			out[name] = on
		}
	}
	return out
}

func setString(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

func setInt(m map[string]any, key string, v *int64) {
	if v != nil {
		m[key] = *v
	}
}

func getInt(m map[string]any, key string) *int64 {
	switch n := m[key].(type) {
	case float64:
		i := int64(n)
		return &i
	case int64:
		return &n
	case int:
		i := int64(n)
		return &i
	}
	return nil
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
