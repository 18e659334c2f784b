// Package webhookcert issues the serving certificate of an admission webhook
// behind a Service, as cert-manager's self-signed Issuer and Certificate do
// for charts that rely on it (KServe's): a CA of its own and a certificate for
// the Service's DNS names. Pure: no I/O.
package webhookcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Bundle is an issued certificate: the keys of a kubernetes.io/tls Secret
// (tls.crt, tls.key, ca.crt) and the CA webhooks name in their caBundle.
type Bundle struct {
	CA, Cert, Key []byte // PEM
	NotAfter      time.Time
}

// Data is the bundle as the data of a kubernetes.io/tls Secret, with ca.crt.
func (b Bundle) Data() map[string][]byte {
	return map[string][]byte{"tls.crt": b.Cert, "tls.key": b.Key, "ca.crt": b.CA}
}

// DNSNames are the names a client uses for a Service: <service>.<namespace>.svc
// (what the API server verifies for a webhook) and its longer forms.
func DNSNames(service, namespace string) []string {
	return []string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}

// Issue makes a CA and a serving certificate for the DNS names, valid from
// an hour before now for validity; the CA's key is not kept (a new bundle is
// issued to renew).
func Issue(dnsNames []string, now time.Time, validity time.Duration) (Bundle, error) {
	if len(dnsNames) == 0 {
		return Bundle{}, errors.New("webhookcert: no DNS name")
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, err
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(validity)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: dnsNames[0] + "-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return Bundle{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Bundle{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: dnsNames[min(2, len(dnsNames)-1)]},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
	}, ca, key.Public(), caKey)
	if err != nil {
		return Bundle{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Bundle{}, fmt.Errorf("webhookcert: %w", err)
	}
	return Bundle{
		CA:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		NotAfter: notAfter,
	}, nil
}

// Check reports why the Secret data does not serve dnsNames[0] with a
// certificate its ca.crt signs and that is valid past renewBefore, "" when it
// does.
func Check(data map[string][]byte, dnsName string, renewBefore time.Time) string {
	block, _ := pem.Decode(data["tls.crt"])
	if block == nil || len(data["tls.key"]) == 0 {
		return "no certificate"
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "certificate: " + err.Error()
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data["ca.crt"]) {
		return "no CA certificate"
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: pool, CurrentTime: renewBefore}); err != nil {
		return err.Error()
	}
	return ""
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}
