package kube

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Connection rules (the same as the hashicorp/kubernetes provider v2):
//   - a kubeconfig is read only when one is named (ConfigPath / ConfigPaths);
//     $KUBECONFIG and ~/.kube/config are never read implicitly;
//   - Host and the credential fields override what the kubeconfig says, or
//     stand alone without one;
//   - with nothing configured, in-cluster configuration when running in a
//     pod; otherwise the client is not configured (ErrNotConfigured) and every
//     request fails with a message that says how to configure it.

// ExecConfig is an exec credential plugin, as in a kubeconfig's users[].user.exec.
type ExecConfig struct {
	APIVersion string
	Command    string
	Args       []string
	Env        map[string]string
}

// Config says how to reach the cluster.
type Config struct {
	ConfigPath  string
	ConfigPaths []string
	// ConfigContext, ConfigContextAuthInfo and ConfigContextCluster pick the
	// kubeconfig's context, and override its user and its cluster.
	ConfigContext         string
	ConfigContextAuthInfo string
	ConfigContextCluster  string
	Host                  string
	Username              string
	Password              string
	Token                 string
	ClusterCACertificate  string
	ClientCertificate     string
	ClientKey             string
	Insecure              bool
	TLSServerName         string
	ProxyURL              string
	Exec                  *ExecConfig
	// ForceConflicts takes ownership of fields another field manager owns.
	ForceConflicts bool
	// Timeout bounds every single request (default DefaultTimeout).
	Timeout time.Duration
	// UserAgent is sent with every request (default FieldManager).
	UserAgent string
	// WrapTransport, when set, wraps the transport of every request
	// (rest.Config.Wrap), e.g. telemetry's request log.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// ErrNotConfigured is the error of every request of a client built from a
// configuration that names no cluster, outside a pod.
var ErrNotConfigured = errors.New("no Kubernetes cluster is configured for the aiplatform provider: " +
	"set config_path or config_paths (or KUBE_CONFIG_PATH / KUBE_CONFIG_PATHS) to a kubeconfig, " +
	"or host with credentials (token, client_certificate/client_key, username/password or an exec block), " +
	"or run Terraform in a pod of the cluster. $KUBECONFIG and ~/.kube/config are not read unless named")

// connection reports whether anything in cfg says where or how to connect.
func (c Config) connection() bool {
	return c.ConfigPath != "" || len(c.ConfigPaths) > 0 || c.ConfigContext != "" || c.ConfigContextAuthInfo != "" ||
		c.ConfigContextCluster != "" || c.Host != "" || c.Username != "" || c.Password != "" || c.Token != "" ||
		c.ClusterCACertificate != "" || c.ClientCertificate != "" || c.ClientKey != "" || c.Insecure ||
		c.TLSServerName != "" || c.ProxyURL != "" || c.Exec != nil
}

// inPod reports whether the process runs in a pod (the variables the kubelet
// sets in every container).
func inPod() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}

// NewClient resolves the configuration into a REST config without network
// access. A configuration that names no cluster (outside a pod) gives
// ErrNotConfigured; use NotConfigured for a client that reports it on use.
func NewClient(cfg Config) (*Client, error) {
	rc, err := restConfig(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.WrapTransport != nil {
		rc.Wrap(cfg.WrapTransport)
	}
	c := NewClientFromREST(rc, cfg.ForceConflicts)
	if cfg.UserAgent != "" {
		c.rest.UserAgent = cfg.UserAgent
	}
	return c, nil
}

// NotConfigured returns a client that makes no request: every operation fails
// with err (ErrNotConfigured, or why the connection is not known yet). The
// provider hands it out so that what needs no cluster works without one.
func NotConfigured(err error) *Client {
	c := NewClientFromREST(&rest.Config{}, false)
	c.unavailable = err
	return c
}

func restConfig(cfg Config) (*rest.Config, error) {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if !cfg.connection() {
		if !inPod() {
			return nil, ErrNotConfigured
		}
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration: %w", err)
		}
		rc.Timeout = timeout
		return rc, nil
	}

	var paths []string
	if cfg.ConfigPath != "" {
		paths = append(paths, cfg.ConfigPath)
	}
	paths = append(paths, cfg.ConfigPaths...)
	// Only the files named: empty rules load nothing at all.
	rules := &clientcmd.ClientConfigLoadingRules{}
	for i, p := range paths {
		full, err := expandHome(p)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(full); err != nil {
			attr := "config_path"
			if cfg.ConfigPath == "" || i > 0 {
				attr = "config_paths"
			}
			return nil, fmt.Errorf("%s %q: %w", attr, p, err)
		}
		rules.Precedence = append(rules.Precedence, full)
	}
	if len(paths) == 0 && cfg.Host == "" {
		return nil, fmt.Errorf("%w (credentials without host or a kubeconfig name no cluster)", ErrNotConfigured)
	}

	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.ConfigContext}
	overrides.Context.AuthInfo = cfg.ConfigContextAuthInfo
	overrides.Context.Cluster = cfg.ConfigContextCluster
	overrides.ClusterInfo.Server = cfg.Host
	overrides.ClusterInfo.TLSServerName = cfg.TLSServerName
	overrides.ClusterInfo.ProxyURL = cfg.ProxyURL
	if cfg.ClusterCACertificate != "" {
		overrides.ClusterInfo.CertificateAuthorityData = []byte(cfg.ClusterCACertificate)
	}
	if cfg.Insecure {
		overrides.ClusterInfo.InsecureSkipTLSVerify = true
	}
	overrides.AuthInfo.Token = cfg.Token
	overrides.AuthInfo.Username = cfg.Username
	overrides.AuthInfo.Password = cfg.Password
	if cfg.ClientCertificate != "" {
		overrides.AuthInfo.ClientCertificateData = []byte(cfg.ClientCertificate)
	}
	if cfg.ClientKey != "" {
		overrides.AuthInfo.ClientKeyData = []byte(cfg.ClientKey)
	}
	if cfg.Exec != nil {
		if cfg.Exec.Command == "" {
			return nil, errors.New("exec: command is required (the credential plugin to run, e.g. aws or gke-gcloud-auth-plugin)")
		}
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
			return nil, fmt.Errorf("%w (the kubeconfig names no cluster)", ErrNotConfigured)
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
