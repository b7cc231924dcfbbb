#!/bin/sh
# Builds syncline-render (the official Kustomize, Helm and Jsonnet engines in one process) into $1.
# The linker flags give Helm the Kubernetes version of the k8s.io modules it is built with (v0.37 → 1.37), as
# Helm's own Makefile does; a render then takes the version from the target cluster.
set -eu
out=${1:?usage: build.sh OUTPUT}
cd "$(dirname "$0")"
CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37" \
  -o "$out" .
