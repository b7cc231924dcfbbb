// Command control-plane runs a real, single-process Kubernetes control plane for tests and the demo:
// embedded etcd, kube-apiserver and kube-controller-manager (namespace, garbage-collector and
// service-account controllers), all from the official Go modules, on loopback and free ports. With
// --workloads it also runs the Deployment, ReplicaSet, StatefulSet and Job controllers and kube-scheduler,
// so that Pods are scheduled onto nodes a node simulator (KWOK) registers and workloads make progress.
//
// It writes <data-dir>/kubeconfig (contexts "admin" and "restricted", static tokens) and prints one JSON
// line {"ready":true,...} on stdout once /readyz is ok and the default namespace exists. SIGTERM or
// SIGINT shuts everything down cleanly. Several instances can run at once, each with its own data dir.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

type config struct {
	dataDir   string
	verbose   int
	workloads bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.dataDir, "data-dir", "", "directory for etcd data, certificates and the kubeconfig (created; required)")
	flag.IntVar(&cfg.verbose, "v", 0, "klog verbosity of the embedded components")
	flag.BoolVar(&cfg.workloads, "workloads", false, "also run the workload controllers (Deployment, ReplicaSet, StatefulSet, Job) and kube-scheduler")
	flag.Parse()
	if cfg.dataDir == "" {
		fmt.Fprintln(os.Stderr, "control-plane: --data-dir is required")
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "control-plane: %v\n", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	dataDir, err := filepath.Abs(cfg.dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	pki, err := writePKI(filepath.Join(dataDir, "pki"))
	if err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}

	etcd, err := startEtcd(filepath.Join(dataDir, "etcd"))
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	defer etcd.Close()

	api, err := startAPIServer(ctx, apiServerInput{dataDir: dataDir, pki: pki, etcdURL: etcd.clientURL, verbose: cfg.verbose})
	if err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}

	kubeconfigPath := filepath.Join(dataDir, "kubeconfig")
	if err := writeKubeconfig(kubeconfigPath, api.url, pki); err != nil {
		return err
	}

	readyCtx, cancelReady := context.WithTimeout(ctx, 3*time.Minute)
	err = waitReady(readyCtx, api.url, pki)
	cancelReady()
	if err != nil {
		return fmt.Errorf("waiting for kube-apiserver: %w", err)
	}

	kcmDone, err := startControllerManager(ctx, controllerManagerInput{dataDir: dataDir, pki: pki, kubeconfig: kubeconfigPath, workloads: cfg.workloads})
	if err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	// Without --workloads nothing schedules: a channel that never delivers keeps the select below uniform.
	schedulerDone := make(<-chan error)
	if cfg.workloads {
		if schedulerDone, err = startScheduler(ctx, kubeconfigPath); err != nil {
			return fmt.Errorf("starting kube-scheduler: %w", err)
		}
	}

	line, _ := json.Marshal(map[string]any{
		"ready":      true,
		"server":     api.url,
		"kubeconfig": kubeconfigPath,
		"pid":        os.Getpid(),
	})
	fmt.Println(string(line))

	select {
	case <-ctx.Done():
	case err := <-api.done:
		if err != nil {
			return fmt.Errorf("kube-apiserver stopped: %w", err)
		}
		return errors.New("kube-apiserver stopped unexpectedly")
	case err := <-kcmDone:
		if err != nil {
			return fmt.Errorf("kube-controller-manager stopped: %w", err)
		}
		return errors.New("kube-controller-manager stopped unexpectedly")
	case err := <-schedulerDone:
		if err != nil {
			return fmt.Errorf("kube-scheduler stopped: %w", err)
		}
		return errors.New("kube-scheduler stopped unexpectedly")
	}

	// Shutting down: the API server drains in-flight requests, then etcd closes (deferred).
	select {
	case <-api.done:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "control-plane: kube-apiserver did not stop within 30s")
	}
	return nil
}
