package modelcache

import (
	"encoding/json"
	"strconv"
)

// What a cache records on its owning object (the claim in mode pvc, the
// DaemonSet in mode node_local), so that the warmed state survives the Job
// that produced it (Jobs are garbage-collected after success), import
// restores the configuration, and a refresh compares against the cluster,
// not only against Terraform's state.
const (
	prefix = "model-cache.aiplatform.terraform.io/"
	// AnnotationConfig holds the record, JSON.
	AnnotationConfig = prefix + "config"
	// Plain annotations for people and other tools: what is warmed.
	AnnotationWarmedRevision = prefix + "warmed-revision"
	AnnotationWarmedAt       = prefix + "warmed-at"
	AnnotationSubPath        = prefix + "sub-path"
	AnnotationSizeBytes      = prefix + "size-bytes"
	// LabelName carries the cache's name on every object and pod of the cache.
	LabelName = prefix + "name"
)

// Modes.
const (
	ModePVC       = "pvc"
	ModeNodeLocal = "node_local"
)

type record struct {
	Mode            string            `json:"mode"`
	URI             string            `json:"uri"`
	Revision        *string           `json:"revision,omitempty"`
	SecretRef       string            `json:"secretRef,omitempty"`
	Downloader      downloaderRecord  `json:"downloader"`
	MountPath       string            `json:"mountPath"`
	HostPath        string            `json:"hostPath,omitempty"`
	NodeSelector    map[string]string `json:"nodeSelector,omitempty"`
	PodAnnotations  map[string]string `json:"podAnnotations,omitempty"`
	BackoffLimit    int64             `json:"backoffLimit"`
	Timeout         string            `json:"timeout"`
	RetainOnDestroy bool              `json:"retainOnDestroy,omitempty"`
	// Warmed is set once a warm-up succeeded.
	Warmed *warmed `json:"warmed,omitempty"`
}

type downloaderRecord struct {
	Image   string   `json:"image"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

type warmed struct {
	Revision  string `json:"revision"`
	SubPath   string `json:"subPath"`
	At        string `json:"at"`
	SizeBytes *int64 `json:"sizeBytes,omitempty"`
	// Keep is the older revision's directory kept beside SubPath (pruned at
	// the next warm-up), so replicas still on it keep working.
	Keep string `json:"keep,omitempty"`
}

// annotations are the owning object's annotations for r.
func (r *record) annotations() map[string]string {
	body, _ := json.Marshal(r)
	out := map[string]string{AnnotationConfig: string(body)}
	if w := r.Warmed; w != nil {
		out[AnnotationWarmedRevision] = w.Revision
		out[AnnotationWarmedAt] = w.At
		out[AnnotationSubPath] = w.SubPath
		if w.SizeBytes != nil {
			out[AnnotationSizeBytes] = strconv.FormatInt(*w.SizeBytes, 10)
		}
	}
	return out
}

// readRecord parses the record of an object's annotations; nil when there is
// none (not made by this resource, or the annotation was removed).
func readRecord(annotations map[string]string) *record {
	body, ok := annotations[AnnotationConfig]
	if !ok {
		return nil
	}
	var r record
	if json.Unmarshal([]byte(body), &r) != nil || r.URI == "" {
		return nil
	}
	return &r
}
