package raftlock

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type testCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func makeCert(t *testing.T, cn string, parent *testCert, isCA bool, usage x509.ExtKeyUsage) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		IsCA:                  isCA,
		BasicConstraintsValid: true,
	}
	if !isCA {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	signer, signKey := tmpl, key
	if parent != nil {
		signer, signKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCert{cert: c, key: key, der: der}
}

func writePEM(t *testing.T, dir, name string, c *testCert) (certFile, keyFile string) {
	t.Helper()
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der}), 0o600); err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(c.key)
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return
}

func TestMutualTLSWithCAAndClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := makeCert(t, "test-ca", nil, true, 0)
	server := makeCert(t, "127.0.0.1", ca, false, x509.ExtKeyUsageServerAuth)
	client := makeCert(t, "client", ca, false, x509.ExtKeyUsageClientAuth)
	caFile, _ := writePEM(t, dir, "ca", ca)
	certFile, keyFile := writePEM(t, dir, "client", client)

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	st := &stub{t: t}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(st.serve))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{server.der}, PrivateKey: server.key}},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes below are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)

	c := newTestClient(t, Config{Endpoints: []string{srv.URL}, CAFile: caFile, CertFile: certFile, KeyFile: keyFile})
	s, err := NewSession(c, WithTTL(10))
	if err != nil {
		t.Fatalf("mutual TLS session: %v", err)
	}
	_ = s.Close()
	if r := st.requests(nil)[0].r; r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "client" {
		t.Fatal("the server saw no client certificate")
	}

	// Without the CA the server's certificate is refused before anything is sent.
	c2 := newTestClient(t, Config{Endpoints: []string{srv.URL}, RetryBudget: 300 * time.Millisecond})
	if _, err := NewSession(c2); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("unknown CA: %v", err)
	}
}
