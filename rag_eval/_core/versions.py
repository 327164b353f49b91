"""Installed package versions, read from metadata (nothing is imported): one home for every versions record."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

# The distributions whose versions shape the numbers; results files and the ranking cache record them.
_PACKAGES = ("rag-eval", "numpy", "pandas", "scipy", "bm25s", "sentence-transformers", "transformers", "torch")


def package_version(distribution: str) -> str | None:
    """The installed version of a distribution (None when it is not installed); imports nothing."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that shape the numbers (from metadata, no imports)."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        found = package_version(name)
        if found is not None:
            versions[name] = found
    return versions
