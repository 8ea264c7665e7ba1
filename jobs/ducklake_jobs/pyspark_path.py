"""PySpark imported from its installed package, not from the archives Spark puts first on a
Python process's path.

Spark starts its Python processes (the workers' daemon; a spark-submit driver) with
``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's source archive at the head of PYTHONPATH.
Those archives hold no compiled modules, and Python cannot cache what it compiles from a zip,
so every such process compiled PySpark's modules again: 0.6-1.0 s before a new session's
first task, the daemon's import of PySpark and each forked worker's of ``pyspark.worker``
(the same imports from the installed package: 0.1 s). Where the archives are the installed
package's own (``$SPARK_HOME`` is the pip-installed ``pyspark``, as here and in the image),
they hold the same modules, and are moved to the end of the path; from any other Spark they
stay first. Nothing here imports PySpark.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder


def _archives(path: list[str]) -> set[str]:
    """The entries of ``path`` that are Spark's Python archives (pyspark.zip, py4j's)."""
    return {
        p
        for p in path
        if os.path.basename(p) == "pyspark.zip" or (os.path.basename(p).startswith("py4j-") and p.endswith("-src.zip"))
    }


def installed_first(path: list[str]) -> list[str]:
    """``path`` with Spark's Python archives last, when the PySpark the rest of the path
    holds is the package those archives came with (they lie in its ``python/lib``)."""
    archives = _archives(path)
    if not archives:
        return path
    rest = [p for p in path if p not in archives]
    spec = PathFinder.find_spec("pyspark", rest)
    if spec is None or spec.origin is None:
        return path
    own = os.path.join(os.path.dirname(spec.origin), "python", "lib")
    if any(os.path.dirname(a) != own for a in archives):
        return path  # another Spark's archives: its PySpark may differ from the installed one
    return rest + [p for p in path if p in archives]


def prefer_installed() -> None:
    """This process's path ``installed_first``; before PySpark is imported (after, it has no
    effect on the modules already loaded)."""
    sys.path[:] = installed_first(sys.path)
