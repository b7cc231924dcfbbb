package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

type apiServerInput struct {
	dataDir string
	pki     *pkiFiles
	etcdURL string
	verbose int
}

type apiServer struct {
	url  string
	done <-chan error
}

// startAPIServer runs kube-apiserver in this process the way its cobra command does (flags → Complete →
// Validate → Run), without the command's own signal handler: that one may only be set up once per
// process, and the controller manager lives here too.
func startAPIServer(ctx context.Context, in apiServerInput) (*apiServer, error) {
	// Bind first and hand the listener over, so the port is ours before anything advertises it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port

	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--etcd-servers=" + in.etcdURL,
		"--etcd-prefix=/registry",
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(in.dataDir, "apiserver-certs"),
		"--tls-cert-file=" + in.pki.servingCert,
		"--tls-private-key-file=" + in.pki.servingKey,
		"--client-ca-file=" + in.pki.caCert,
		"--token-auth-file=" + in.pki.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + in.pki.saPub,
		"--service-account-signing-key-file=" + in.pki.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority,StorageObjectInUseProtection,PersistentVolumeClaimResize,RuntimeClass,DefaultIngressClass,DefaultStorageClass",
		fmt.Sprintf("--v=%d", in.verbose),
	}
	if err := fs.Parse(args); err != nil {
		ln.Close()
		return nil, err
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		ln.Close()
		return nil, err
	}
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = port
	rest.SetDefaultWarningHandler(rest.NoWarnings{})

	completed, err := s.Complete(ctx)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		ln.Close()
		return nil, utilerrors.NewAggregate(errs)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, completed) }()
	return &apiServer{url: fmt.Sprintf("https://127.0.0.1:%d", port), done: done}, nil
}
