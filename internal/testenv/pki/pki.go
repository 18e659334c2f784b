// Package pki makes the key material of a local cluster: a CA, the API
// server's loopback serving certificate, the front-proxy client certificate,
// the service-account signing key pair and an admin token.
package pki

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

// PKI holds the paths of the cluster's key material, all under <dir>/pki.
type PKI struct {
	CACert, CAKey           string // cluster CA (also --client-ca-file)
	ServingCert, ServingKey string // 127.0.0.1 / localhost serving cert signed by the CA
	ProxyCert, ProxyKey     string // front-proxy client cert: the API server's identity towards aggregated APIs
	SAKey, SAPub            string // service-account token signing key pair (RSA)
	TokenFile               string // --token-auth-file
	CAPEM                   []byte // the CA certificate
	Token                   string // the admin bearer token (group system:masters)
}

// New generates a CA, a serving certificate for loopback, a service-account
// key pair and an admin token, and writes them under dir.
func New(dir string) (*PKI, error) {
	dir = filepath.Join(dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &PKI{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "serving.crt"), ServingKey: filepath.Join(dir, "serving.key"),
		ProxyCert: filepath.Join(dir, "front-proxy-client.crt"), ProxyKey: filepath.Join(dir, "front-proxy-client.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
		TokenFile: filepath.Join(dir, "tokens.csv"),
	}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          Serial(),
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
	p.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: Serial(),
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
		SerialNumber: Serial(),
		Subject:      pkix.Name{CommonName: FrontProxyClient},
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
	p.Token = hex.EncodeToString(tok)

	files := []struct {
		path string
		data []byte
	}{
		{p.CACert, p.CAPEM},
		{p.CAKey, KeyPEM(caKey)},
		{p.ServingCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER})},
		{p.ServingKey, KeyPEM(servingKey)},
		{p.ProxyCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxyDER})},
		{p.ProxyKey, KeyPEM(proxyKey)},
		{p.SAKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		{p.SAPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		// token,user,uid,"group1,group2"
		{p.TokenFile, fmt.Appendf(nil, "%s,admin,admin,\"system:masters\"\n", p.Token)},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// FrontProxyClient is the common name of the front-proxy client certificate,
// the only one the API server's --requestheader-allowed-names accepts.
const FrontProxyClient = "front-proxy-client"

// KeyPEM is k in PKCS#8 PEM.
func KeyPEM(k crypto.Signer) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err) // only for key types MarshalPKCS8PrivateKey always supports
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// Serial is a random certificate serial number.
func Serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}
