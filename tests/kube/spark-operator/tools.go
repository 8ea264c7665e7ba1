//go:build tools

// The Kubeflow Spark Operator's main package, which build.sh builds; imported here so
// `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "github.com/kubeflow/spark-operator/v2/cmd/operator"
)
