"""Nested retrievers (hybrid's children, a cross-encoder's first stage): their spec, checked like a top-level one, and their building."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers import registry, shared_children
from rag_eval._retrievers.params import AdapterParams


class RetrieverRef(AdapterParams):
    """A nested retriever spec (``hybrid``'s children, ``cross_encoder``'s first stage).

    Checked like a top-level retriever, without building it: the adapter must name a
    retriever class and its params must fit that class.
    """

    adapter: str = Field(min_length=1, description="a retriever name such as bm25 or dense, or 'module:Class'")
    params: dict[str, Any] = Field(default_factory=dict, description="the retriever's own parameters")

    @model_validator(mode="after")
    def _check_retriever(self) -> RetrieverRef:
        registry.check(self.adapter, self.params)
        return self


def build_child(ref: Any, where: str, cache_dir: Path | None = None) -> Any:
    """Build a nested retriever from a checked :class:`~rag_eval._retrievers.params.RetrieverRef`.

    ``where`` names the spec in error messages (``hybrid: retrievers[1]``). When
    ``cache_dir`` is given and the child names a ``cache_dir`` parameter that its
    own params leave unset, the parent's cache folder is passed down.
    """

    params = dict(ref.params)
    try:
        if cache_dir is not None and "cache_dir" not in params:
            names = registry.parameter_names(registry.resolve(ref.adapter))
            if names is not None and "cache_dir" in names:  # never pushed into a **kwargs catch-all
                params["cache_dir"] = str(cache_dir)
        # Equal children of several parents (the variants of a sweep over fusion or re-ranking) are built,
        # indexed and searched once per run (rag_eval._retrievers.shared_children).
        return shared_children.shared(ref.adapter, params, lambda: registry.build(ref.adapter, params))
    except RetrieverError as error:
        raise RetrieverError(f"{where}: {error}") from error
