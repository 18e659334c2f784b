package testenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of the cluster's key material, all under <dir>/pki.
type pki struct {
	caCert, caKey           string // cluster CA (also --client-ca-file)
	servingCert, servingKey string // 127.0.0.1 / localhost serving cert signed by the CA
	proxyCert, proxyKey     string // front-proxy client cert: the API server's identity towards aggregated APIs
	saKey, saPub            string // service-account token signing key pair (RSA)
	tokenFile               string // --token-auth-file
	caPEM                   []byte
	token                   string
}

// newPKI generates a CA, a serving certificate for loopback, a service-account
// key pair and an admin token, and writes them under dir.
func newPKI(dir string) (*pki, error) {
	dir = filepath.Join(dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "serving.crt"), servingKey: filepath.Join(dir, "serving.key"),
		proxyCert: filepath.Join(dir, "front-proxy-client.crt"), proxyKey: filepath.Join(dir, "front-proxy-client.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
		tokenFile: filepath.Join(dir, "tokens.csv"),
	}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "testenv-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// 10.0.0.1 is the "kubernetes" Service's ClusterIP in 10.0.0.0/24.
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}, ca, servingKey.Public(), caKey)
	if err != nil {
		return nil, err
	}

	proxyKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	proxyDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: frontProxyClient},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, proxyKey.Public(), caKey)
	if err != nil {
		return nil, err
	}

	// The service-account signing key is RSA: every Kubernetes version accepts it.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}

	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	p.token = hex.EncodeToString(tok)

	files := []struct {
		path string
		data []byte
	}{
		{p.caCert, p.caPEM},
		{p.caKey, keyPEM(caKey)},
		{p.servingCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER})},
		{p.servingKey, keyPEM(servingKey)},
		{p.proxyCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxyDER})},
		{p.proxyKey, keyPEM(proxyKey)},
		{p.saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		{p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		// token,user,uid,"group1,group2"
		{p.tokenFile, fmt.Appendf(nil, "%s,admin,admin,\"system:masters\"\n", p.token)},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// frontProxyClient is the common name of the front-proxy client certificate,
// the only one the API server's --requestheader-allowed-names accepts.
const frontProxyClient = "front-proxy-client"

func keyPEM(k crypto.Signer) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err) // only for key types MarshalPKCS8PrivateKey always supports
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

// Names Kueue's internal certificate management (the open-policy-agent cert
// rotator) checks its Secret against: a CA certificate valid for the DNS name
// "kueue-ca", and a serving certificate valid for the webhook Service's DNS name
// <webhookServiceName>.<namespace>.svc. A Secret that fails either check is
// regenerated by Kueue, with a certificate for the Service name only.
const (
	kueueCAName      = "kueue-ca"
	kueueServiceName = "kueue-webhook-service"
)

// Keys of the kueue-webhook-server-cert Secret, also the file names in the
// manager's certDir.
const (
	caCertKey  = "ca.crt"
	caKeyKey   = "ca.key"
	tlsCertKey = "tls.crt"
	tlsKeyKey  = "tls.key"
)

// newKueueWebhookCerts generates the Kueue webhook server's CA and serving
// certificate, keyed like the kueue-webhook-server-cert Secret. The CA has
// its own RSA key, PEM-encoded as PKCS#1 ("RSA PRIVATE KEY"): the rotator
// parses ca.key with x509.ParsePKCS1PrivateKey and regenerates everything when
// that fails. The serving certificate is valid both for the Service's DNS name
// (so the rotator keeps it) and for 127.0.0.1 (the address the API server calls
// the webhooks at).
func newKueueWebhookCerts(namespace string) (map[string][]byte, error) {
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: kueueCAName, Organization: []string{"kueue"}},
		DNSNames:              []string{kueueCAName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	dnsName := kueueServiceName + "." + namespace + ".svc"
	servingDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: dnsName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{dnsName},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}, ca, servingKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		caCertKey:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		caKeyKey:   pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(caKey)}),
		tlsCertKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER}),
		tlsKeyKey:  keyPEM(servingKey),
	}, nil
}
