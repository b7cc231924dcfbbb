package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func writeKubeconfig(path, server string, pki *pkiFiles) error {
	ca := base64.StdEncoding.EncodeToString(pki.caPEM)
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: syncline-test
  cluster:
    server: %[1]s
    certificate-authority-data: %[2]s
users:
- name: admin
  user:
    token: %[3]s
- name: restricted
  user:
    token: %[4]s
contexts:
- name: admin
  context: {cluster: syncline-test, user: admin}
- name: restricted
  context: {cluster: syncline-test, user: restricted}
current-context: admin
`, server, ca, pki.adminToken, pki.restrictedTok)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// waitReady polls until /readyz answers ok and the default namespace exists (created by the API
// server's own bootstrap controller a moment after it starts serving).
func waitReady(ctx context.Context, server string, pki *pkiFiles) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pki.caPEM)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	get := func(path string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+path, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+pki.adminToken)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	var last error
	for {
		code, err := get("/readyz")
		if err == nil && code == http.StatusOK {
			code, err = get("/api/v1/namespaces/default")
			if err == nil && code == http.StatusOK {
				return nil
			}
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("status %d", code)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
