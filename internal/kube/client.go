// Package kube is the only code in the provider that talks to the Kubernetes API
// server: client construction, server-side apply, reads, deletes, waits and the
// mapping of API errors to messages a user can act on.
package kube

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "terraform-provider-aiplatform"

// Client-side rate limits. client-go's defaults (5 qps, burst 10) make a
// 78-object diff take 30 s instead of 3 s.
const (
	DefaultQPS     = 100
	DefaultBurst   = 200
	DefaultTimeout = 30 * time.Second
)

// ExecConfig is an exec credential plugin, as in a kubeconfig's users[].user.exec.
type ExecConfig struct {
	APIVersion string
	Command    string
	Args       []string
	Env        map[string]string
}

// Config says how to reach the cluster. Empty fields fall back to the kubeconfig;
// an entirely empty Config means in-cluster config, then ~/.kube/config.
type Config struct {
	ConfigPath           string
	ConfigContext        string
	Host                 string
	Token                string
	ClusterCACertificate string
	ClientCertificate    string
	ClientKey            string
	Insecure             bool
	Exec                 *ExecConfig
	// ForceConflicts takes ownership of fields another field manager owns.
	ForceConflicts bool
	// Timeout bounds every single request (default DefaultTimeout).
	Timeout time.Duration
	// WrapTransport, when set, wraps the transport of every request
	// (rest.Config.Wrap), e.g. telemetry's request log.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

func (c Config) empty() bool {
	return c.ConfigPath == "" && c.ConfigContext == "" && c.Host == "" && c.Token == "" &&
		c.ClusterCACertificate == "" && c.ClientCertificate == "" && c.ClientKey == "" &&
		!c.Insecure && c.Exec == nil
}

// Client holds the REST configuration and lazily built clients. Building it does
// not contact the server: the first operation that needs the cluster does, and an
// unreachable server is reported then, naming the host.
type Client struct {
	rest           *rest.Config
	forceConflicts bool

	once    sync.Once
	dyn     dynamic.Interface
	typed   kubernetes.Interface
	initErr error

	nodes    listCache[corev1.Node]
	pods     listCache[corev1.Pod]
	matching sync.Map // canonical selector → []*corev1.Node (NodesMatching)
	versions sync.Map // group/resource → served version, when not the Kind's own
}

// NewClient resolves the configuration into a REST config without network access.
func NewClient(cfg Config) (*Client, error) {
	rc, err := restConfig(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.WrapTransport != nil {
		rc.Wrap(cfg.WrapTransport)
	}
	return NewClientFromREST(rc, cfg.ForceConflicts), nil
}

// NewClientFromREST wraps an existing REST config (tests, benchmarks).
func NewClientFromREST(rc *rest.Config, forceConflicts bool) *Client {
	rc = rest.CopyConfig(rc)
	if rc.QPS < DefaultQPS {
		rc.QPS = DefaultQPS
	}
	if rc.Burst < DefaultBurst {
		rc.Burst = DefaultBurst
	}
	if rc.Timeout == 0 {
		rc.Timeout = DefaultTimeout
	}
	rc.UserAgent = FieldManager
	return &Client{rest: rc, forceConflicts: forceConflicts}
}

// Host is the API server address this client talks to.
func (c *Client) Host() string { return c.rest.Host }

// REST returns a copy of the REST config.
func (c *Client) REST() *rest.Config { return rest.CopyConfig(c.rest) }

func (c *Client) init() error {
	c.once.Do(func() {
		c.dyn, c.initErr = dynamic.NewForConfig(c.rest)
		if c.initErr == nil {
			c.typed, c.initErr = kubernetes.NewForConfig(c.rest)
		}
	})
	return c.initErr
}

// Typed returns the typed clientset.
func (c *Client) Typed() (kubernetes.Interface, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	return c.typed, nil
}

// Dynamic returns the dynamic client.
func (c *Client) Dynamic() (dynamic.Interface, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	return c.dyn, nil
}

func restConfig(cfg Config) (*rest.Config, error) {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if cfg.empty() {
		if rc, err := rest.InClusterConfig(); err == nil {
			rc.Timeout = timeout
			return rc, nil
		}
	}

	rules := &clientcmd.ClientConfigLoadingRules{}
	switch {
	case cfg.ConfigPath != "":
		p, err := expandHome(cfg.ConfigPath)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("config_path %q: %w", cfg.ConfigPath, err)
		}
		rules.ExplicitPath = p
	case cfg.Host == "":
		// No explicit cluster: the usual kubeconfig search ($KUBECONFIG, ~/.kube/config).
		rules = clientcmd.NewDefaultClientConfigLoadingRules()
	}

	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.ConfigContext}
	if cfg.Host != "" {
		overrides.ClusterInfo.Server = cfg.Host
	}
	if cfg.ClusterCACertificate != "" {
		overrides.ClusterInfo.CertificateAuthorityData = []byte(cfg.ClusterCACertificate)
	}
	if cfg.Insecure {
		overrides.ClusterInfo.InsecureSkipTLSVerify = true
	}
	if cfg.Token != "" {
		overrides.AuthInfo.Token = cfg.Token
	}
	if cfg.ClientCertificate != "" {
		overrides.AuthInfo.ClientCertificateData = []byte(cfg.ClientCertificate)
	}
	if cfg.ClientKey != "" {
		overrides.AuthInfo.ClientKeyData = []byte(cfg.ClientKey)
	}
	if cfg.Exec != nil {
		exec := &clientcmdapi.ExecConfig{
			APIVersion:      cfg.Exec.APIVersion,
			Command:         cfg.Exec.Command,
			Args:            cfg.Exec.Args,
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}
		for k, v := range cfg.Exec.Env {
			exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: v})
		}
		overrides.AuthInfo.Exec = exec
	}

	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no Kubernetes cluster configured: set config_path (or KUBE_CONFIG_PATH), host, or run inside a cluster")
		}
		return nil, fmt.Errorf("loading Kubernetes client configuration: %w", err)
	}
	rc.Timeout = timeout
	return rc, nil
}

func expandHome(p string) (string, error) {
	if len(p) < 2 || p[:2] != "~/" {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, p[2:]), nil
}
