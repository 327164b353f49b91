"""``rag-eval clean``: remove the collections rag_eval created in the databases a config names.

Only managed collections are touched: a name with rag_eval's prefix AND rag_eval's stored
fingerprint (each adapter's ``managed_collections``). A read-only retriever's collection, or any
other collection of the database, is never listed or removed. ``--dry-run`` lists without removing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rag_eval._data.config.schema import load_config
from rag_eval._retrievers.external.vector_db import VectorDBRetriever
from rag_eval._run.build import build_retriever


def clean_config(path: str | Path, say: Callable[[str], None], *, dry_run: bool = False) -> int:
    """Remove (or with ``dry_run`` list) the managed collections of every database retriever of the config.

    Returns how many collections were found. Retrievers that are not databases are skipped; each
    database is connected to once, even when several retrievers name it.
    """
    config = load_config(path)
    found = 0
    seen: set[str] = set()
    for spec in config.model.retrievers:
        retriever = build_retriever(spec, config)
        if not isinstance(retriever, VectorDBRetriever):
            continue
        try:
            retriever.connect()
            where = retriever.location()
            if where in seen:
                continue
            seen.add(where)
            names = retriever.managed_collections()
            for name in names:
                if dry_run:
                    say(f"would remove {retriever.ADAPTER} collection {name} ({where})")
                else:
                    retriever.drop(name)
                    say(f"removed {retriever.ADAPTER} collection {name} ({where})")
            found += len(names)
            if not names:
                say(f"{retriever.ADAPTER} ({where}): no collection of rag_eval's")
        finally:
            retriever.close()
    if not seen:  # silence would read as "cleaned"
        say("no database retriever in this config: nothing to clean (rag-eval clean removes managed collections)")
    return found
