//go:build tools

// The upstream main packages this module builds; imported here so `go mod tidy` keeps
// their dependencies in go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)
