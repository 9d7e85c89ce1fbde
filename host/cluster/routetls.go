package cluster

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"
)

// Routes between nodes are TLS 1.3 with certificates both sides verify, derived from the
// cluster secret, so no certificates need to be handed out: every node derives the same
// Ed25519 certificate authority key from the secret (HKDF-SHA256), makes a fresh key for
// itself at each start and signs its own certificate with the authority key. A node accepts a
// route only from a peer whose certificate that authority signed, that is, from a holder of the
// secret, and everything on the route (the NATS route password included) is encrypted.
// The secret must be strong (`atelier serve` creates 32 random bytes): the authority's public
// key travels in the handshake, and a guessable secret could be found from it.

// routeServerName is the name every node's certificate carries and every node expects.
const routeServerName = "atelier-cluster"

// routeTLS returns the TLS configuration of the routes of a node named name.
func routeTLS(secret, name string) (*tls.Config, error) {
	seed, err := hkdf.Key(sha256.New, []byte(secret), nil, "atelier cluster route authority", ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("route TLS: derive the authority key: %w", err)
	}
	caKey := ed25519.NewKeyFromSeed(seed)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "atelier cluster authority"},
		NotBefore:             time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2120, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("route TLS: make the authority certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("route TLS: read the authority certificate: %w", err)
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("route TLS: make the node key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("route TLS: make a serial number: %w", err)
	}
	now := time.Now()
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{routeServerName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, ca, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("route TLS: make the node certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ServerName:   routeServerName,
	}, nil
}
