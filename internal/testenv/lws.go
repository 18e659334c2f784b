package testenv

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/pki"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The LeaderWorkerSet controller (sigs.k8s.io/lws, main in cmd/) runs as a
// local process. It serves admission webhooks for LeaderWorkerSets and for the
// pods of LeaderWorkerSets (labelled leaderworkerset.sigs.k8s.io/name), all
// with failurePolicy Fail: testenv registers them by URL on loopback with its
// own CA, and turns the controller's internal certificate management off, so
// the controller serves the certificate testenv wrote and patches nothing.
// The CRD's conversion webhook is not registered: the CRD has one version, so
// the API server never calls it.

const lwsModule = podrunner.LWSModule

// LWSGroupVersion is the API of LeaderWorkerSets.
var LWSGroupVersion = schema.GroupVersion{Group: "leaderworkerset.x-k8s.io", Version: "v1"}

// LWSCRDDir is the directory of the LeaderWorkerSet CRD in the sigs.k8s.io/lws
// module.
func LWSCRDDir(ctx context.Context) (string, error) {
	dir, err := ModuleDir(ctx, lwsModule, LWSVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config", "crd", "bases"), nil
}

// lwsLocal is what running the LWS controller locally takes, prepared once per
// Env and reused by every StartLWS.
type lwsLocal struct {
	config     string // the controller's --config file
	webhookURL string // https://127.0.0.1:<port>
	healthURL  string // http://127.0.0.1:<port>
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
}

// prepareLWS writes the controller's configuration and certificates under
// <Dir>/lws and reads its webhooks from the module's manifests.
func (e *Env) prepareLWS(ctx context.Context) error {
	mod, err := ModuleDir(ctx, lwsModule, LWSVersion)
	if err != nil {
		return err
	}
	free, err := pickPorts(2)
	if err != nil {
		return err
	}
	dir := filepath.Join(e.Dir, "lws")
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	l := &lwsLocal{
		config:     filepath.Join(dir, "config.yaml"),
		webhookURL: fmt.Sprintf("https://127.0.0.1:%d", free[0]),
		healthURL:  fmt.Sprintf("http://127.0.0.1:%d", free[1]),
	}
	ca, cert, key, err := loopbackServingCert("lws-ca")
	if err != nil {
		return err
	}
	// controller-runtime's webhook server reads tls.crt and tls.key from certDir.
	for name, data := range map[string][]byte{tlsCertKey: cert, tlsKeyKey: key} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return err
		}
	}
	config, err := lwsConfig(mod, free[0], free[1], certDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(l.config, config, 0o644); err != nil {
		return err
	}
	if l.mutating, l.validating, err = lwsWebhooks(mod, l.webhookURL, ca); err != nil {
		return err
	}
	e.operators.lws = l
	return nil
}

// lwsConfig is the controller's configuration: LWS's own
// (config/manager/controller_manager_config.yaml in the module) with what a
// local process on a shared machine needs instead.
func lwsConfig(mod string, webhookPort, healthPort int, certDir string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(mod, "config", "manager", "controller_manager_config.yaml"))
	if err != nil {
		return nil, fmt.Errorf("testenv: LWS's default configuration: %w", err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("testenv: LWS's default configuration: %w", err)
	}
	maps.Copy(cfg, map[string]any{
		// Loopback only, on free ports (the defaults :9443, :8081 and :8443
		// listen on every interface).
		"webhook": map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir},
		"health":  map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)},
		"metrics": map[string]any{"bindAddress": "0"},
		// One controller, nothing to elect (and no lws-system namespace for
		// the lease).
		"leaderElection": map[string]any{"leaderElect": false},
		// On, the controller would keep its certificate in a Secret in
		// lws-system, for the Service name only, and rewrite the webhook
		// configurations' caBundle; testenv's certificate and webhooks are
		// for 127.0.0.1 and already carry the CA.
		"internalCertManagement": map[string]any{"enable": false},
	})
	return yaml.Marshal(cfg)
}

// lwsWebhooks reads LWS's webhook configurations (config/webhook/manifests.yaml)
// with the JSON patches its kustomization applies (which give the pod webhooks
// their objectSelector: only pods of a LeaderWorkerSet), named as LWS's
// kustomize build names them ("lws-" prefix), each webhook called by URL on
// loopback with ca as its caBundle.
func lwsWebhooks(mod, baseURL string, ca []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	dir := filepath.Join(mod, "config", "webhook")
	docs, err := lwsWebhookDocs(dir)
	if err != nil {
		return nil, nil, err
	}
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	for kind, raw := range docs {
		switch kind {
		case "MutatingWebhookConfiguration":
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := json.Unmarshal(raw, mutating); err != nil {
				return nil, nil, fmt.Errorf("testenv: LWS's webhooks: %w", err)
			}
			mutating.Name = "lws-" + mutating.Name
			for i := range mutating.Webhooks {
				w := &mutating.Webhooks[i]
				if err := toURL(&w.ClientConfig, w.Name, baseURL, ca); err != nil {
					return nil, nil, err
				}
			}
		case "ValidatingWebhookConfiguration":
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := json.Unmarshal(raw, validating); err != nil {
				return nil, nil, fmt.Errorf("testenv: LWS's webhooks: %w", err)
			}
			validating.Name = "lws-" + validating.Name
			for i := range validating.Webhooks {
				w := &validating.Webhooks[i]
				if err := toURL(&w.ClientConfig, w.Name, baseURL, ca); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, errors.New("testenv: LWS's manifests.yaml lacks a mutating or validating webhook configuration")
	}
	return mutating, validating, nil
}

// toURL points a webhook at baseURL + its service path.
func toURL(cc *admissionregistrationv1.WebhookClientConfig, name, baseURL string, ca []byte) error {
	if cc.Service == nil || cc.Service.Path == nil {
		return fmt.Errorf("testenv: LWS's webhook %s has no service path", name)
	}
	url := baseURL + *cc.Service.Path
	*cc = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	return nil
}

// lwsWebhookDocs returns the webhook configurations of dir/manifests.yaml as
// JSON by kind, with the patches of dir/kustomization.yaml applied. The
// patches are JSON patches whose operations add or replace whole webhooks
// (path /webhooks/<i>); anything else is an error, so that a new LWS version
// whose kustomization does more is noticed rather than half applied.
func lwsWebhookDocs(dir string) (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifests.yaml"))
	if err != nil {
		return nil, fmt.Errorf("testenv: LWS's webhooks: %w", err)
	}
	docs := map[string]map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("testenv: LWS's webhooks: %w", err)
		}
		if kind, _ := doc["kind"].(string); kind != "" {
			docs[kind] = doc
		}
	}

	data, err = os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, fmt.Errorf("testenv: LWS's webhook kustomization: %w", err)
	}
	var kustomization struct {
		Patches []struct {
			Path   string `json:"path"`
			Target struct {
				Kind string `json:"kind"`
			} `json:"target"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		return nil, fmt.Errorf("testenv: LWS's webhook kustomization: %w", err)
	}
	for _, p := range kustomization.Patches {
		doc := docs[p.Target.Kind]
		if p.Path == "" || doc == nil {
			return nil, fmt.Errorf("testenv: LWS's webhook kustomization: unexpected patch %+v", p)
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p.Path)))
		if err != nil {
			return nil, fmt.Errorf("testenv: LWS's webhook patch: %w", err)
		}
		var ops []struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value"`
		}
		if err := yaml.Unmarshal(data, &ops); err != nil {
			return nil, fmt.Errorf("testenv: %s: %w", p.Path, err)
		}
		webhooks, _ := doc["webhooks"].([]any)
		for _, op := range ops {
			i, err := strconv.Atoi(strings.TrimPrefix(op.Path, "/webhooks/"))
			if !strings.HasPrefix(op.Path, "/webhooks/") || err != nil || i < 0 || i >= len(webhooks) || (op.Op != "replace" && op.Op != "add") {
				return nil, fmt.Errorf("testenv: %s: unsupported patch operation %s %s", p.Path, op.Op, op.Path)
			}
			if op.Op == "replace" {
				webhooks[i] = op.Value
			} else {
				webhooks = append(webhooks[:i], append([]any{op.Value}, webhooks[i:]...)...)
			}
		}
		doc["webhooks"] = webhooks
	}

	out := map[string]json.RawMessage{}
	for kind, doc := range docs {
		raw, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		out[kind] = raw
	}
	return out, nil
}

// loopbackServingCert generates a CA and a serving certificate it signs for
// 127.0.0.1, all PEM.
func loopbackServingCert(caName string) (caPEM, certPEM, servingKeyPEM []byte, _ error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          pki.Serial(),
		Subject:               pkix.Name{CommonName: caName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: pki.Serial(),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pki.KeyPEM(key), nil
}

// StartLWS registers LWS's webhooks, starts the LWS controller and waits until
// it is ready: /readyz ok and its webhooks answering the API server. Start
// calls it with Options.RunLWS; call it again after StopLWS.
func (e *Env) StartLWS(ctx context.Context) error {
	if e.External {
		return errors.New("testenv: the cluster is external (TESTENV_KUBECONFIG), so testenv does not run its LWS controller")
	}
	if e.operators.lws == nil {
		return errors.New("testenv: the environment was started without Options.RunLWS")
	}
	if p := e.proc(LWSController); p != nil && !p.Exited() {
		return errors.New("testenv: the LWS controller is already running")
	}
	t := time.Now()
	admission := e.Client.AdmissionregistrationV1()
	if err := createOrReplace(ctx, admission.MutatingWebhookConfigurations(), e.operators.lws.mutating.DeepCopy()); err != nil {
		return fmt.Errorf("testenv: %s: %w", e.operators.lws.mutating.Name, err)
	}
	if err := createOrReplace(ctx, admission.ValidatingWebhookConfigurations(), e.operators.lws.validating.DeepCopy()); err != nil {
		return fmt.Errorf("testenv: %s: %w", e.operators.lws.validating.Name, err)
	}
	p, err := e.start(LWSController, []string{
		"--config=" + e.operators.lws.config,
		"--kubeconfig=" + e.Kubeconfig,
		"--leader-elect=false", // the flag's default (true) would win over the file only if set
	})
	if err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, p, e.operators.lws.healthURL+"/readyz", &http.Client{Timeout: 2 * time.Second}); err != nil {
		return err
	}
	if err := e.waitLWSWebhooks(ctx, p); err != nil {
		return err
	}
	e.logf("lws-controller %s ready (webhooks at %s, %s)", LWSVersion, e.operators.lws.webhookURL, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// StopLWS stops the LWS controller only. Its webhooks stay registered with
// failurePolicy Fail, so creating LeaderWorkerSets, or their pods, fails until
// StartLWS.
func (e *Env) StopLWS() error {
	return e.stopComponent(LWSController, "LWS controller")
}

// waitLWSWebhooks waits until the API server gets answers from LWS's webhooks
// (see lwsAnswers), failing early if p (when not nil) exits.
func (e *Env) waitLWSWebhooks(ctx context.Context, p *process.Proc) error {
	return e.waitWebhooks(ctx, p, LWSController, "LWS", func(ctx context.Context) error { return podrunner.LWS.Answers(ctx, e.Dynamic) })
}
