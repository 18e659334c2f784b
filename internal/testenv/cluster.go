package testenv

import (
	"context"
	"errors"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/controlplane"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/faultproxy"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/nodes"
)

// What tests use of the packages testenv composes, under the names they had.

// NodePool describes identical fake nodes, named <Name>-0, <Name>-1, ….
type NodePool = nodes.NodePool

// NodeAnnotation marks a Node as fake: kwok manages the nodes whose
// annotation NodeAnnotation has the value "fake".
const NodeAnnotation = nodes.NodeAnnotation

// Labels the fake GPU nodes carry, as NVIDIA's GPU feature discovery sets them.
const (
	GPUResource     = nodes.GPUResource
	GPUProductLabel = nodes.GPUProductLabel
	GPUCountLabel   = nodes.GPUCountLabel
	GPUMemoryLabel  = nodes.GPUMemoryLabel
)

// Annotations that steer kwok's fake pods (see package nodes).
const (
	PodCompleteDelayAnnotation = nodes.PodCompleteDelayAnnotation
	PodFailAnnotation          = nodes.PodFailAnnotation
)

// The default StorageClass and its provisioner (see package nodes).
const (
	StorageClass       = nodes.StorageClass
	StorageProvisioner = nodes.StorageProvisioner
)

// DefaultControllers are the kube-controller-manager controllers testenv runs.
var DefaultControllers = controlplane.DefaultControllers

// FaultProxy is a loopback TCP proxy in front of the API server for fault
// tests (package faultproxy).
type FaultProxy = faultproxy.Proxy

// NewFaultProxy starts a proxy to the env's API server; Close stops it.
func (e *Env) NewFaultProxy() (*FaultProxy, error) { return faultproxy.New(e.Host, e.CAData, e.Token) }

// AddNodes creates the pool's nodes (numbered after any existing <Name>-N)
// and waits until kwok reports them Ready, returning their names.
func (e *Env) AddNodes(ctx context.Context, pool NodePool) ([]string, error) {
	if !e.External && !e.opts.Scheduling {
		return nil, errors.New("testenv: fake nodes need kwok: start the environment with Options.Scheduling")
	}
	return e.nodes().Add(ctx, pool)
}

// DeleteNode deletes a node and waits until it is gone. Its pods are deleted
// later by the pod garbage collector, as in a real cluster.
func (e *Env) DeleteNode(ctx context.Context, name string) error {
	return e.nodes().Delete(ctx, name)
}

func (e *Env) nodes() *nodes.Nodes {
	n := &nodes.Nodes{Client: e.Client, Timeout: e.opts.Timeout}
	if !e.External {
		n.KwokLog = e.LogPath(Kwok)
	}
	return n
}

// ApplyCRDs creates or updates every CustomResourceDefinition found in the YAML
// (or JSON) files of dirs, other documents being ignored, then waits until all
// are Established.
func (e *Env) ApplyCRDs(ctx context.Context, dirs ...string) error {
	return controlplane.ApplyCRDs(ctx, e.RESTConfig, e.opts.Timeout, dirs...)
}

// nodeLease is Options.NodeLease or its default.
func (e *Env) nodeLease() time.Duration {
	if e.opts.NodeLease > 0 {
		return e.opts.NodeLease
	}
	return 40 * time.Second
}
