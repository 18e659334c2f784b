package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// ApplyCRDs creates or updates every CustomResourceDefinition found in the YAML
// (or JSON) files of dirs, other documents being ignored, then waits until all
// are Established. An existing CRD keeps its conversion webhook unless the file
// sets spec.conversion.
func ApplyCRDs(ctx context.Context, cfg *rest.Config, timeout time.Duration, dirs ...string) error {
	crds, err := readCRDs(dirs)
	if err != nil {
		return err
	}
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			_, err := api.Create(ctx, crd, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				return err
			}
			live, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			update := crd.DeepCopy()
			update.ResourceVersion = live.ResourceVersion
			// A CRD file without spec.conversion (the usual case: conversion
			// webhooks are set by whoever serves them, e.g. a chart) keeps
			// the cluster's, as kubectl apply would. Replaced by the default
			// (None), a running Kueue manager would lose its conversion
			// webhooks.
			if update.Spec.Conversion == nil {
				update.Spec.Conversion = live.Spec.Conversion
			}
			_, err = api.Update(ctx, update, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("testenv: applying CRD %s: %w", crd.Name, err)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, crd := range crds {
		for {
			live, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err == nil && established(live) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("testenv: CRD %s not Established after %s", crd.Name, timeout)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	})
}

// readCRDs decodes the CRDs in the *.yaml, *.yml and *.json files of dirs
// (not recursively), in file name order.
func readCRDs(dirs []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("testenv: CRD directory: %w", err)
		}
		for _, entry := range entries {
			ext := filepath.Ext(entry.Name())
			if entry.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			path := filepath.Join(dir, entry.Name())
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				var raw json.RawMessage
				if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					return nil, fmt.Errorf("testenv: %s: %w", path, err)
				}
				var meta metav1.TypeMeta
				if len(raw) == 0 || json.Unmarshal(raw, &meta) != nil || meta.Kind != "CustomResourceDefinition" {
					continue
				}
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := json.Unmarshal(raw, crd); err != nil {
					return nil, fmt.Errorf("testenv: %s: %w", path, err)
				}
				crds = append(crds, crd)
			}
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("testenv: no CustomResourceDefinition in %s", strings.Join(dirs, ", "))
	}
	return crds, nil
}
