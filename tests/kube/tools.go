//go:build tools

// The upstream main packages this module builds; imported here so `go mod tidy` keeps
// their dependencies in go.sum. kubelet, kube-proxy and kube-scheduler make the test
// cluster's node (tests/support/kube_node.py); kubectl's commands are the tests' client.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
	_ "k8s.io/kubectl/pkg/cmd"
)
