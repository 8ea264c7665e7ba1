"""ducklake-operator: declarative DuckLake tables, from a CLI or a Kubernetes controller."""

__version__ = "0.1.0"
