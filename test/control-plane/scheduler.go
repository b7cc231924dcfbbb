package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// startScheduler runs the default kube-scheduler in this process, so Pods get a node (a simulated one: the
// tests run KWOK against this control plane). Only the flags the scheduler needs are parsed; the feature
// gates are the ones kube-controller-manager already set in this process.
func startScheduler(ctx context.Context, kubeconfig string) (<-chan error, error) {
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, name := range []string{"deprecated", "leader election", "secure serving"} {
		fs.AddFlagSet(opts.Flags.FlagSet(name))
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0"}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	cc, sched, err := app.Setup(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("setting up kube-scheduler: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cc, sched) }()
	return done, nil
}
