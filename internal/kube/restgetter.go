package kube

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Discovery-backed mapping, for code that handles objects of kinds it does
// not know in advance (the objects of a Helm chart). Typed resources never
// use it: they plan and read without discovery.

// discoveryState is built on first use, once per Client.
type discoveryState struct {
	once   sync.Once
	disco  discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	err    error
}

var discoveries sync.Map // *Client → *discoveryState

func (c *Client) discovery() (*discoveryState, error) {
	v, _ := discoveries.LoadOrStore(c, &discoveryState{})
	d := v.(*discoveryState)
	d.once.Do(func() {
		if c.unavailable != nil {
			d.err = c.unavailable
			return
		}
		dc, err := discovery.NewDiscoveryClientForConfig(c.rest)
		if err != nil {
			d.err = err
			return
		}
		d.disco = memory.NewMemCacheClient(dc)
		d.mapper = restmapper.NewDeferredDiscoveryRESTMapper(d.disco)
	})
	return d, d.err
}

// ResetDiscovery forgets the cached API groups, e.g. after CRDs were installed.
func (c *Client) ResetDiscovery() {
	if d, err := c.discovery(); err == nil {
		d.mapper.Reset()
	}
}

// Mapping returns how to reach objects of the given kind. A kind the cached
// discovery does not know is looked up again once (its CRD may be new).
func (c *Client) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	d, err := c.discovery()
	if err != nil {
		return nil, err
	}
	m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		d.mapper.Reset()
		m, err = d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}

// ObjectClient returns the dynamic client for obj and settles obj's
// namespace: its own, else defaultNamespace for namespaced kinds, none for
// cluster-scoped kinds.
func (c *Client) ObjectClient(obj *unstructured.Unstructured, defaultNamespace string) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	m, err := c.Mapping(obj.GroupVersionKind())
	if err != nil {
		return nil, nil, err
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, nil, err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		obj.SetNamespace("")
		return dyn.Resource(m.Resource), m, nil
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = defaultNamespace
		obj.SetNamespace(ns)
	}
	return dyn.Resource(m.Resource).Namespace(ns), m, nil
}

// ObjectName is "Kind/namespace/name" or "Kind/name".
func ObjectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + "/" + obj.GetName()
	}
	return obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// RESTClientGetter is what the Helm SDK needs to reach the cluster: the
// provider's REST configuration (rate limits, timeout, user agent, auth) and
// a kubeconfig loader whose only content is the namespace.
func (c *Client) RESTClientGetter(namespace string) genericclioptions.RESTClientGetter {
	return &restGetter{client: c, namespace: namespace}
}

type restGetter struct {
	client    *Client
	namespace string
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) {
	if g.client.unavailable != nil {
		return nil, g.client.unavailable
	}
	return g.client.REST(), nil
}

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	d, err := g.client.discovery()
	if err != nil {
		return nil, err
	}
	return d.disco, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	d, err := g.client.discovery()
	if err != nil {
		return nil, err
	}
	return restmapper.NewShortcutExpander(d.mapper, d.disco, nil), nil
}

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(),
		&clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}
