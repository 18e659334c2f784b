package webhookcert

import (
	"strings"
	"testing"
	"time"
)

func TestIssueAndCheck(t *testing.T) {
	now := time.Now()
	names := DNSNames("kserve-webhook-server-service", "kserve")
	b, err := Issue(names, now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if why := Check(b.Data(), "kserve-webhook-server-service.kserve.svc", now); why != "" {
		t.Fatalf("fresh bundle refused: %s", why)
	}
	if why := Check(b.Data(), "other.kserve.svc", now); why == "" {
		t.Fatal("a certificate for another Service accepted")
	}
	if why := Check(b.Data(), names[2], now.Add(48*time.Hour)); !strings.Contains(why, "expired") {
		t.Fatalf("expired certificate: %q", why)
	}
	other, err := Issue(names, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mixed := b.Data()
	mixed["ca.crt"] = other.CA
	if why := Check(mixed, names[2], now); why == "" {
		t.Fatal("a certificate its ca.crt did not sign accepted")
	}
	if why := Check(map[string][]byte{}, names[2], now); why != "no certificate" {
		t.Fatalf("empty Secret: %q", why)
	}
	if _, err := Issue(nil, now, time.Hour); err == nil {
		t.Fatal("no DNS name accepted")
	}
}
