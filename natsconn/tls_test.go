package natsconn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsconn"
)

// pki is a throwaway certificate authority with a server certificate for
// 127.0.0.1 and a client certificate, all as PEM files in a temp dir.
type pki struct {
	ca, clientCert, clientKey string // file paths
	server                    tls.Certificate
	pool                      *x509.CertPool
}

func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "turnlog test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	issue := func(serial int64, name string, usage x509.ExtKeyUsage, ips ...net.IP) ([]byte, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}, caCert, &key.PublicKey, caKey)
		require.NoError(t, err)
		return der, key
	}
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
		return path
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		return der
	}

	p := &pki{pool: x509.NewCertPool()}
	p.pool.AddCert(caCert)
	p.ca = write("ca.pem", "CERTIFICATE", caDER)
	serverDER, serverKey := issue(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, net.IPv4(127, 0, 0, 1))
	p.server = tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}
	clientDER, clientKey := issue(3, "turnlog client", x509.ExtKeyUsageClientAuth)
	p.clientCert = write("client.pem", "CERTIFICATE", clientDER)
	p.clientKey = write("client-key.pem", "EC PRIVATE KEY", keyDER(clientKey))
	return p
}

// Issue 17: `--context NAME` takes TLS settings from a nats CLI context:
// ca, cert, key and tls_first. Each case writes a context as `nats context
// add` would and connects with it to a server that speaks only TLS.
func TestContextTLS(t *testing.T) {
	p := newPKI(t, t.TempDir())
	other := newPKI(t, t.TempDir())
	serverTLS := &tls.Config{Certificates: []tls.Certificate{p.server}, ClientCAs: p.pool, MinVersion: tls.VersionTLS12}
	plain := natstest.StartTLS(t, natstest.TLSServer{Config: serverTLS})
	verifying := natstest.StartTLS(t, natstest.TLSServer{Config: serverTLS, VerifyClients: true})
	first := natstest.StartTLS(t, natstest.TLSServer{Config: serverTLS, HandshakeFirst: true})

	cfg := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "nats", "context"), 0o700))
	for _, tc := range []struct {
		name    string
		context map[string]any
		err     string // "" when the connection must succeed
	}{
		{name: "the context's ca verifies the server",
			context: map[string]any{"url": plain, "ca": p.ca}},
		{name: "without the ca the server's certificate is not trusted",
			context: map[string]any{"url": plain},
			err:     "presented a TLS certificate turnlog cannot verify: nats: tls error: tls: failed to verify certificate: x509: certificate signed by unknown authority; pass the CA that signed it with --tls-ca"},
		{name: "cert and key answer a server that verifies clients",
			context: map[string]any{"url": verifying, "ca": p.ca, "cert": p.clientCert, "key": p.clientKey}},
		{name: "without cert and key a server that verifies clients refuses",
			context: map[string]any{"url": verifying, "ca": p.ca},
			err:     "if it verifies its clients, pass a client certificate with --tls-cert and --tls-key"},
		{name: "a client certificate of another CA is refused",
			context: map[string]any{"url": verifying, "ca": p.ca, "cert": other.clientCert, "key": other.clientKey},
			err:     "ended the TLS handshake with the client certificate " + other.clientCert},
		{name: "tls_first answers a server that wants the handshake first",
			context: map[string]any{"url": first, "ca": p.ca, "tls_first": true}},
		{name: "without tls_first that server is not reached",
			context: map[string]any{"url": first, "ca": p.ca},
			err:     `the server closed the connection (EOF); if it expects the TLS handshake first (handshake_first), set "tls_first": true in the nats context`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Base(t.Name())
			data, err := json.Marshal(tc.context)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(cfg, "nats", "context", name+".json"), data, 0o600))

			plan, err := natsconn.Settings{Context: name, Getenv: env(map[string]string{"XDG_CONFIG_HOME": cfg})}.Resolve()
			require.NoError(t, err)
			nc, err := plan.Connect()
			if tc.err != "" {
				require.Error(t, err, "the connection must fail")
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			defer nc.Close()
			state, err := nc.TLSConnectionState()
			require.NoError(t, err, "the connection is TLS")
			assert.True(t, state.HandshakeComplete)
			require.NoError(t, nc.Flush(), "the server answers on it")
		})
	}
}
