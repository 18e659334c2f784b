// Package manifests installs software that ships plain Kubernetes manifests
// rather than a Helm chart (the MPI Operator's deploy/v2beta1/mpi-operator.yaml):
// it reads the manifest file, renders it (namespace, image), and applies,
// checks for drift, and removes the objects by server-side apply, with the
// semantics of internal/helm's releases. It is the cluster side of the
// install engine's manifest-set back end (internal/resources/installs,
// manifest_set.go), as internal/helm is of its Helm back end:
//
//   - source.go: where the file comes from (a URL or a local path) and
//     parsing it into objects;
//   - set.go: a Set of objects installed together: install (Namespaces and
//     CRDs first, then the rest, then a readiness wait; a failed install is
//     removed), upgrade (apply, prune what the new set dropped, wait; a failed
//     upgrade applies the previous set again), drift of every object against
//     the live cluster, uninstall that keeps CRDs unless asked;
//   - record.go: what a Set applied, kept in the cluster in a Secret next to
//     it (as Helm keeps a release), so that drift, import and uninstall do not
//     depend on the file still being readable;
//   - mpi_operator.go: what the provider knows of the MPI Operator's file.
//
// Cluster I/O goes through internal/kube (ApplyObjects, Drift, WaitReady,
// DeleteObject); this package only decides what to apply, in which order.
package manifests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Source is where a manifest file comes from: a local Path, else a URL.
type Source struct {
	URL  string
	Path string
}

func (s Source) String() string {
	if s.Path != "" {
		return s.Path
	}
	return s.URL
}

// maxSize bounds a manifest file (the MPI Operator's is 0.5 MB).
const maxSize = 16 << 20

// downloads caches files read from URLs for the provider process: a plan and
// its refreshes read a URL once.
var downloads sync.Map // URL → []byte

// Load reads the file.
func Load(ctx context.Context, s Source) ([]byte, error) {
	if s.Path != "" {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		return b, nil
	}
	if s.URL == "" {
		return nil, errors.New("no manifest source: neither a path nor a URL")
	}
	if b, ok := downloads.Load(s.URL); ok {
		return b.([]byte), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("manifests URL %q: %w", s.URL, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading manifests (set manifests.path to a local copy when the cluster's network has no route to it): %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading manifests from %s: HTTP %s", s.URL, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("downloading manifests from %s: %w", s.URL, err)
	}
	if len(b) > maxSize {
		return nil, fmt.Errorf("manifests at %s are larger than %d MiB", s.URL, maxSize>>20)
	}
	downloads.Store(s.URL, b)
	return b, nil
}

// Parse splits a multi-document YAML (or JSON) file into objects, skipping
// empty documents and flattening Lists. Every object needs apiVersion, kind
// and metadata.name.
func Parse(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if u.IsList() {
			err := u.EachListItem(func(o runtime.Object) error {
				item, ok := o.(*unstructured.Unstructured)
				if !ok {
					return fmt.Errorf("document %d: a list item that is not an object", n)
				}
				out = append(out, item)
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("document %d (%s): no metadata.name", n, u.GetKind())
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("the file holds no objects")
	}
	return out, nil
}
