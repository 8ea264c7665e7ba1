//go:build tools

// CoreDNS, the cluster DNS of the test node (as Kubernetes v1.34 ships it: kubeadm's
// CoreDNSVersion), built from its module by ../build.sh.
package tools

import (
	_ "github.com/coredns/coredns"
)
