package manifests

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Record is what a Set applied, kept in a Secret in the Set's namespace —
// what Helm's release Secret is to a chart — so that drift, import and
// uninstall work from what is in the cluster, whether or not the manifest
// file can still be read.
type Record struct {
	Version string // the software's version, e.g. v0.8.0
	Source  string // where the file came from: "path:<file>" or "url:<URL>"
	Image   string // the controller image applied
	// NamespaceExisted: the Set's namespace was there before the install,
	// so uninstall leaves it.
	NamespaceExisted bool
	Objects          []*unstructured.Unstructured
}

// SourceString is how a Record names a Source.
func SourceString(s Source) string {
	if s.Path != "" {
		return "path:" + s.Path
	}
	return "url:" + s.URL
}

// ParseSource is the inverse of SourceString.
func ParseSource(s string) Source {
	switch {
	case len(s) > 5 && s[:5] == "path:":
		return Source{Path: s[5:]}
	case len(s) > 4 && s[:4] == "url:":
		return Source{URL: s[4:]}
	}
	return Source{}
}

var secretKind = kube.Kind{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}

// recordType is the record Secret's type.
const recordType = "aiplatform.io/manifest-set.v1"

func (s *Set) recordRef() kube.Ref {
	return kube.Ref{Namespace: s.Namespace, Name: "aiplatform.manifests." + s.Name}
}

func (s *Set) recordObject(rec Record) (*unstructured.Unstructured, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	objs := make([]map[string]any, len(rec.Objects))
	for i, o := range rec.Objects {
		objs[i] = o.Object
	}
	if err := json.NewEncoder(zw).Encode(objs); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	existed := "false"
	if rec.NamespaceExisted {
		existed = "true"
	}
	b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
	obj := kube.NewObject(secretKind, s.recordRef(), map[string]any{
		"type": recordType,
		"metadata": map[string]any{"labels": map[string]any{
			"app.kubernetes.io/managed-by": kube.FieldManager,
			"aiplatform.io/manifest-set":   s.Name,
		}},
		"data": map[string]any{
			"version":          b64(rec.Version),
			"source":           b64(rec.Source),
			"image":            b64(rec.Image),
			"namespaceExisted": b64(existed),
			"objects":          base64.StdEncoding.EncodeToString(buf.Bytes()),
		},
	})
	return obj, nil
}

// Get reads the Set's record; found is false when there is none.
func (s *Set) Get(ctx context.Context) (*Record, bool, error) {
	obj, found, err := s.Client.Get(ctx, secretKind, s.recordRef())
	if err != nil || !found {
		return nil, false, err
	}
	if t, _, _ := unstructured.NestedString(obj.Object, "type"); t != recordType {
		return nil, false, fmt.Errorf("Secret %s is not a record of installed manifests (type %q, want %q)", s.recordRef(), t, recordType)
	}
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	field := func(k string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(data[k])
		return string(b), err
	}
	rec := &Record{}
	var existed string
	for k, dst := range map[string]*string{"version": &rec.Version, "source": &rec.Source, "image": &rec.Image, "namespaceExisted": &existed} {
		if *dst, err = field(k); err != nil {
			return nil, false, fmt.Errorf("record %s: %s: %w", s.recordRef(), k, err)
		}
	}
	rec.NamespaceExisted = existed == "true"
	z, err := base64.StdEncoding.DecodeString(data["objects"])
	if err != nil {
		return nil, false, fmt.Errorf("record %s: objects: %w", s.recordRef(), err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, false, fmt.Errorf("record %s: objects: %w", s.recordRef(), err)
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		return nil, false, fmt.Errorf("record %s: objects: %w", s.recordRef(), err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, false, fmt.Errorf("record %s: objects: %w", s.recordRef(), err)
	}
	for _, r := range raw {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(r); err != nil {
			return nil, false, fmt.Errorf("record %s: objects: %w", s.recordRef(), err)
		}
		rec.Objects = append(rec.Objects, u)
	}
	return rec, true, nil
}

func (s *Set) writeRecord(ctx context.Context, rec Record) error {
	obj, err := s.recordObject(rec)
	if err != nil {
		return err
	}
	if err := s.Client.ApplyObjects(ctx, []*unstructured.Unstructured{obj}, s.Namespace); err != nil {
		return fmt.Errorf("recording what was applied: %w", err)
	}
	return nil
}

func (s *Set) deleteRecord(ctx context.Context) error {
	obj := kube.NewObject(secretKind, s.recordRef(), nil)
	return s.Client.DeleteObject(ctx, obj)
}
