package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// applyManifests server-side applies the manifest file of a controller that
// ships no chart (Install.Manifests): its Namespaces, then its CRDs, then the
// rest, each applied once the kinds it needs are served; then it waits until
// the Deployments in Install.Namespace are Available.
func (e *Env) applyManifests(ctx context.Context, client *kube.Client, a *podrunner.Adapter) error {
	path, err := a.Install.Manifests.Path(ctx)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("testenv: %s's manifests: %w", a.Name, err)
	}
	objs, err := manifestObjects(data)
	if err != nil {
		return fmt.Errorf("testenv: %s's manifests %s: %w", a.Name, path, err)
	}
	rank := func(o *unstructured.Unstructured) int {
		switch o.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, e.controllerTimeout())
	defer cancel()
	for r := 0; r <= 2; r++ {
		batch := slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool { return rank(o) != r })
		if len(batch) == 0 {
			continue
		}
		// A kind just made served (a CRD) can take a moment to be known.
		for {
			err := client.ApplyObjects(ctx, batch, a.Install.Namespace)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("testenv: applying %s's manifests: %w", a.Name, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	e.logf("%s: applied %d objects of %s", a.Name, len(objs), path)
	for {
		deps, err := e.Client.AppsV1().Deployments(a.Install.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil && len(deps.Items) > 0 && !slices.ContainsFunc(deps.Items, func(d appsv1.Deployment) bool { return d.Status.AvailableReplicas < 1 }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s's Deployments in %s not Available after %s\n%s", a.Name, a.Install.Namespace, e.controllerTimeout(), e.podLogs(a))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// manifestObjects parses a multi-document YAML file into objects, skipping
// empty documents.
func manifestObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}
