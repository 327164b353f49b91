"""Installed package versions, read from metadata (nothing is imported): one home for every versions record."""

from __future__ import annotations

import functools
import platform
from importlib.metadata import PackageNotFoundError, version

# The distributions whose versions shape the numbers; results files and the ranking cache record them.
_PACKAGES = ("rag-eval", "numpy", "pandas", "scipy", "bm25s", "sentence-transformers", "transformers", "torch")


# rag_eval's own distribution: "rag-eval" on PyPI is another project. Records keep calling it
# "rag-eval" (the command's name, and the key results files have always used).
DISTRIBUTION = "rag-eval-trec"


def install_extra(extra: str) -> str:
    """How to install one of rag_eval's extras, for a message: the one home of that advice.

    rag_eval is installed from a checkout (it is not on PyPI), so ``pip install "rag-eval-trec[x]"``
    would fail; the command names the checkout's own extra.
    """
    return f'pip install ".[{extra}]" in your rag_eval checkout'


def package_version(distribution: str) -> str | None:
    """The installed version of a distribution (None when it is not installed); imports nothing.

    ``rag-eval`` names this package, whatever its distribution is called (:data:`DISTRIBUTION`).
    """
    try:
        return version(DISTRIBUTION if distribution == "rag-eval" else distribution)
    except PackageNotFoundError:
        return None


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that shape the numbers (from metadata, no imports); a new dict each call."""
    return dict(_read_versions())


@functools.cache
def _read_versions() -> dict[str, str]:
    # Read once per process: each metadata lookup scans sys.path (about 10 ms for the eight), and a
    # run asks for them twice per retriever (its results file, its ranking cache key).
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        found = package_version(name)
        if found is not None:
            versions[name] = found
    return versions
