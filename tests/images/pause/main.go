// The pod sandboxes' pause program for the tests' node: holds the pod's namespaces open,
// doing nothing, until the kubelet's runtime stops it (SIGTERM, or SIGINT by hand); then it
// exits 0. It reaps no children: the pods' containers do not share its PID namespace.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
