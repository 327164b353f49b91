"""A corpus as a Ray dataset of ``{doc_id, text}``, read by the workers: JSON Lines in byte ranges, Parquet by row groups.

Texts travel as UTF-8 bytes (with ``surrogatepass``: a lone surrogate in a JSON string
survives), so the driver never holds them. pyarrow and Ray are imported inside the functions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import check_input_file
from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._execution.corpus_stream import byte_ranges, passage_record, read_range


def passages_dataset(source: str | os.PathLike[str] | Iterable[tuple[str, str]], prefix: str, spec: ExecutionSpec) -> Any:
    """A Ray dataset of ``{doc_id, text}`` (both binary: UTF-8 with surrogatepass), streamed from ``source``."""
    import ray.data

    if not isinstance(source, (str, os.PathLike)):
        pairs = [(str(doc_id), prefix + text) for doc_id, text in source]
        return ray.data.from_items([{"doc_id": _utf8(d), "text": _utf8(t)} for d, t in pairs])
    path = Path(source)
    if not path.exists():
        raise DatasetError(f"{path}: no such corpus file or folder")
    if path.is_dir() or path.suffix == ".parquet":
        dataset = ray.data.read_parquet(str(path))
        return dataset.map_batches(
            _as_udf(_parquet_rows), fn_kwargs={"source": str(path), "prefix": prefix}, batch_format="pyarrow"
        )

    check_input_file(path, "corpus file", None, DatasetError)
    ranges = byte_ranges(path)
    pieces = ray.data.from_items(
        [{"start": start, "stop": stop} for start, stop in ranges], override_num_blocks=len(ranges)
    )
    return pieces.map_batches(
        _as_udf(_read_ranges),
        fn_kwargs={"path": str(path), "prefix": prefix, "batch": spec.batch_size},
        batch_size=1,
        batch_format="numpy",
    )


def _read_ranges(ranges: dict[str, np.ndarray], *, path: str, prefix: str, batch: int) -> Iterator[Any]:
    """Ray Data UDF: the passages of each byte range, ``batch`` at a time (a generator: streamed)."""
    pa = arrow()

    for start, stop in zip(ranges["start"].tolist(), ranges["stop"].tolist()):
        for doc_ids, texts in read_range(path, start, stop, prefix, batch):
            yield pa.table(
                {"doc_id": pa.array(map(_utf8, doc_ids), pa.binary()), "text": pa.array(map(_utf8, texts), pa.binary())}
            )


def _parquet_rows(table: Any, *, source: str, prefix: str) -> Any:
    """Ray Data UDF: Parquet rows (``_id`` or ``id``, ``title``, ``text``) to ``{doc_id, text}`` as the loader reads them."""
    pa = arrow()

    names = set(table.column_names)
    id_column = "_id" if "_id" in names else "id"
    if id_column not in names or "text" not in names:
        raise DatasetError(f"{source}: a Parquet corpus needs columns _id (or id) and text (title optional)")
    ids = table.column(id_column).to_pylist()
    texts = table.column("text").to_pylist()
    titles = table.column("title").to_pylist() if "title" in names else [None] * len(ids)
    doc_ids, encoded = [], []
    for raw_id, title, text in zip(ids, titles, texts):
        doc_id, joined = passage_record(
            {"_id": raw_id, "title": title, "text": text}, f"{source}: row with id {raw_id!r}"
        )
        doc_ids.append(_utf8(doc_id))
        encoded.append(_utf8(prefix + joined))
    return pa.table({"doc_id": pa.array(doc_ids, pa.binary()), "text": pa.array(encoded, pa.binary())})


def arrow() -> Any:
    """pyarrow (installed with ray[data]), imported only on workers and when used."""
    import pyarrow  # type: ignore[import-untyped]

    return pyarrow


def _as_udf(function: Callable[..., Any]) -> Any:
    """A keyword-taking UDF as map_batches accepts it (its stubs allow only one-argument callables)."""
    return function


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
