package main

import (
	"context"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

type controllerManagerInput struct {
	dataDir    string
	pki        *pkiFiles
	kubeconfig string
	workloads  bool
}

// The controllers tests depend on: namespaces really go away, owners garbage-collect their dependents,
// every namespace gets its default ServiceAccount and root CA ConfigMap, and ClusterRoles labelled
// aggregate-to-view/edit/admin join the built-in roles (the chart's aggregated roles).
const controllers = "namespace-controller,garbage-collector-controller,serviceaccount-controller," +
	"serviceaccount-token-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller"

// With --workloads, the controllers that turn workloads into Pods and follow them: Deployments make
// ReplicaSets, ReplicaSets and StatefulSets make Pods, Jobs make Pods and complete or fail from their
// phases, finished Jobs expire by ttlSecondsAfterFinished, and Pods of vanished nodes are collected.
const workloadControllers = ",deployment-controller,replicaset-controller,statefulset-controller,job-controller," +
	"ttl-after-finished-controller,pod-garbage-collector-controller"

func startControllerManager(ctx context.Context, in controllerManagerInput) (<-chan error, error) {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	named := s.Flags(app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases())
	s.ParsedFlags = &named
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--kubeconfig=" + in.kubeconfig,
		"--authentication-kubeconfig=" + in.kubeconfig,
		"--authorization-kubeconfig=" + in.kubeconfig,
		"--controllers=" + enabledControllers(in.workloads),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + in.pki.saKey,
		"--root-ca-file=" + in.pki.caCert,
		"--cert-dir=" + filepath.Join(in.dataDir, "controller-manager-certs"),
		"--concurrent-gc-syncs=5",
		"--concurrent-namespace-syncs=5",
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	c, err := s.Config(ctx, app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases())
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, c.Complete()) }()
	return done, nil
}

func enabledControllers(workloads bool) string {
	if workloads {
		return controllers + workloadControllers
	}
	return controllers
}
