"""ducklake-operator: declarative DuckLake tables, from a CLI or a Kubernetes controller."""

from importlib.metadata import version

# pyproject.toml is the version's one home; every way the package is run installs it (the
# image, the wheel, the editable install), so its metadata is always there.
__version__ = version("ducklake-operator")
