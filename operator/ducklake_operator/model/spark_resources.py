"""How a user writes a Spark pod's resources (pure): the spellings the CRDs' schemas accept and
the launchers read."""

from __future__ import annotations

JVM_MEMORY_PATTERN = r"^(\d+)([kmgtp]?)b?$"  # Spark's sizes (512m, 2g, 2gb)
# CPUs as a Kubernetes quantity a person writes: whole or decimal CPUs (2, 0.5) or millicores
# (500m), to the millicore
CPU_PATTERN = r"^(\d+(\.\d{1,3})?|\d+m)$"
