"""The dataset loaders under their first name: ``from rag_eval.dataset import load_dataset`` keeps working.

Everything lives in :mod:`rag_eval.datasets` (one module per job); this module
re-exports its public names, listed once, in the package's ``__all__``.
"""

from __future__ import annotations

from rag_eval.datasets import *  # noqa: F403
from rag_eval.datasets import __all__ as __all__
