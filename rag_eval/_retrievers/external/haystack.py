"""``adapter: haystack``: a team's Haystack 2 pipeline or retriever component, built by their own factory.

YAML::

    adapter: haystack
    params:
      factory: "my_rag.pipelines:build_query_pipeline"   # returns a Pipeline, or a retriever component
      factory_params: {store_path: ./store}
      input: embedder.text            # the pipeline input that receives the query text
      top_k_input: retriever.top_k    # optional: where top_k goes
      output: retriever.documents     # the output that holds the ranked documents
      map: {passage_id: passage_id}   # how a hit becomes a passage (docs/integrations.md)

A pipeline is run once per query, ``pipeline.run({component: {socket: query}, ...})``, and the
documents are read from ``output`` (a component that feeds another is asked to give its output
too). Left out, ``input`` is the pipeline's one open input named ``text`` or ``query``, ``output``
its one final output named ``documents``, and ``top_k_input`` the output component's ``top_k``
input when it is open (else the pipeline answers with its own top k, and short answers are
counted). A component (an ``InMemoryBM25Retriever``...) is called ``run(query=..., top_k=...)``
(``input``: the parameter name, default ``query``; ``output``: the result key, default
``documents``). Each ``Document`` is a hit: ``score``, ``content``, ``meta``, ``id``.

Haystack sends usage telemetry unless told not to: rag_eval sets ``HAYSTACK_TELEMETRY_ENABLED=False``
(when it is not set) before the factory's module is imported.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers.external.by_text import metadata_of
from rag_eval._retrievers.external.factories import FactoryParams, FactoryRetriever
from rag_eval._retrievers.external.hits import Hit

_SOCKET = r"^[^.\s]+(\.[^.\s]+)?$"


class HaystackParams(FactoryParams):
    """Parameters of ``adapter: haystack`` (see the module docstring)."""

    input: str | None = Field(
        None, pattern=_SOCKET, description='pipeline: "component.socket" receiving the query text | component: its parameter'
    )
    top_k_input: str | None = Field(
        None, pattern=_SOCKET, description='where top_k goes: "component.socket" (pipeline) or a parameter (component)'
    )
    output: str | None = Field(
        None, pattern=_SOCKET, description='pipeline: "component.socket" holding the documents | component: the result key'
    )

    @field_validator("factory", mode="before")
    @classmethod
    def _no_telemetry(cls, value: Any) -> Any:
        # before the factory's module (which imports haystack) is imported: Haystack reads it once, at import
        os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
        return value


class HaystackRetriever(FactoryRetriever):
    """Runs what the factory returned, a Haystack ``Pipeline`` or a retriever component, once per query."""

    Params = HaystackParams
    ADAPTER = "haystack"
    DISTRIBUTION = "haystack-ai"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.input: tuple[str, str] | None = None  # (component, socket); component "" for a lone component
        self.top_k_input: tuple[str, str] | None = None
        self.output: tuple[str, str] | None = None
        self._include: set[str] | None = None

    def adopt(self, built: Any) -> None:
        """Keep a ``Pipeline`` (its sockets checked) or a component with ``run``; anything else is refused."""
        from haystack import Pipeline

        if isinstance(built, Pipeline):
            self.kind = "pipeline"
            self._wire_pipeline(built)
        elif hasattr(built, "__haystack_input__") and callable(getattr(built, "run", None)):
            self.kind = "component"
            self._wire_component(built)
        else:
            raise self.refuse(built, "a Haystack Pipeline or a retriever component")
        self.target = built

    def _wire_pipeline(self, pipeline: Any) -> None:
        open_inputs = _sockets(pipeline.inputs())
        all_outputs = _sockets(pipeline.outputs(include_components_with_connected_outputs=True))
        final_outputs = _sockets(pipeline.outputs())
        given = self.settings
        self.input = self._socket("input", given.input, open_inputs, lambda s: s[1] in ("text", "query"),
                                  "the open input that receives the query text")
        self.output = self._socket("output", given.output, all_outputs,
                                   lambda s: s[1] == "documents" and s in final_outputs, "the output holding the documents")
        if given.top_k_input is not None:
            self.top_k_input = self._socket("top_k_input", given.top_k_input, open_inputs, lambda s: False, "")
        elif (self.output[0], "top_k") in open_inputs:
            self.top_k_input = (self.output[0], "top_k")
        self._include = None if self.output in final_outputs else {self.output[0]}

    def _socket(self, field: str, given: str | None, known: list[tuple[str, str]], fits: Any, what: str) -> tuple[str, str]:
        listed = ", ".join(f"{c}.{s}" for c, s in known) or "none"
        if given is None:
            found = [socket for socket in known if fits(socket)]
            if len(found) == 1:
                return found[0]
            raise RetrieverError(
                f"{self.ADAPTER}: params.{field} is not set and the pipeline has {len(found) or 'no'} "
                f"{'candidates' if found else 'candidate'} for {what}; set params.{field} to one of: {listed}"
            )
        component, _, socket = given.partition(".")
        if not socket or (component, socket) not in known:
            kind = "open input" if field != "output" else "output"
            raise RetrieverError(
                f"{self.ADAPTER}: params.{field} {given!r} is not an {kind} of the pipeline built by "
                f"{self.settings.factory!r}; set it to one of: {listed}"
            )
        return component, socket

    def _wire_component(self, component: Any) -> None:
        try:
            parameters = list(inspect.signature(component.run).parameters)
        except (TypeError, ValueError):
            parameters = []
        for field, name in (("input", self.settings.input or "query"), ("top_k_input", self.settings.top_k_input)):
            if name is not None and ("." in name or name not in parameters):
                raise RetrieverError(
                    f"{self.ADAPTER}: params.{field} {name!r} is not a parameter of {self.target_class}.run(); a "
                    f"component is called by parameter name: set params.{field} to one of: {', '.join(parameters)}"
                )
        self.input = ("", self.settings.input or "query")
        top_k = self.settings.top_k_input or ("top_k" if "top_k" in parameters else None)
        self.top_k_input = ("", top_k) if top_k is not None else None
        output = self.settings.output or "documents"
        if "." in output:
            raise RetrieverError(
                f"{self.ADAPTER}: params.output {output!r}: a component's output is a key of what run() returns "
                "(such as documents), with no component name"
            )
        self.output = ("", output)

    def scores_note(self) -> str:
        """Document scores as given."""
        return "Document.score, as given (higher = better; a document without a score: rank order)"

    def ask(self, text: str, k: int) -> list[Hit]:
        """One query's hits, best first."""
        assert self.input is not None and self.output is not None
        if self.kind == "pipeline":
            data: dict[str, dict[str, Any]] = {self.input[0]: {self.input[1]: text}}
            if self.top_k_input is not None:
                data.setdefault(self.top_k_input[0], {})[self.top_k_input[1]] = k
            result = self.target.run(data, include_outputs_from=self._include)
            produced = result.get(self.output[0], {}) if isinstance(result, Mapping) else {}
        else:
            arguments: dict[str, Any] = {self.input[1]: text}
            if self.top_k_input is not None:
                arguments[self.top_k_input[1]] = k
            produced = self.target.run(**arguments)
        documents = produced.get(self.output[1]) if isinstance(produced, Mapping) else None
        if not isinstance(documents, list):
            where = ".".join(part for part in self.output if part)
            raise RetrieverError(
                f"{self.ADAPTER}: params.output {where!r} gave {type(documents).__name__}, not a list of Documents; "
                "set params.output to the socket holding the retrieved documents"
            )
        return [_hit(document) for document in documents]

    def target_info(self) -> dict[str, Any]:
        """The factory and object (:meth:`FactoryRetriever.target_info`) and the sockets used."""
        info = super().target_info()
        for name in ("input", "top_k_input", "output"):
            socket = getattr(self, name)
            info[name] = ".".join(part for part in socket if part) if socket is not None else None
        return info


def _sockets(tree: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``{component: {socket: ...}}`` as ``(component, socket)`` pairs, in the pipeline's order."""
    return [(component, socket) for component, sockets in tree.items() for socket in sockets]


def _hit(document: Any) -> Hit:
    """A Haystack ``Document`` as a hit."""
    identifier = getattr(document, "id", None)
    return Hit(
        id=str(identifier) if identifier is not None else None,
        score=getattr(document, "score", None),  # as given: settled (checked, made a float) by TextHitsRetriever.search
        text=getattr(document, "content", None),
        metadata=metadata_of(getattr(document, "meta", None)),
    )
