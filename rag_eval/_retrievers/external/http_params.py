"""``http``'s parameters: the endpoint, the request template, where the hits are and their fields, checked.

Kept apart from :mod:`rag_eval._retrievers.external.http` (the requests): validating a config needs only this.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.http_requests import MAX_WAIT_S
from rag_eval._core.masking import shown_url
from rag_eval._retrievers.external.by_text import SCORES_HELP, Scores, TextHitsParams
from rag_eval._retrievers.external.json_path import compile_path
from rag_eval._retrievers.params import AdapterParams

QUERY, QUERIES, TOP_K = "{query}", "{queries}", "{top_k}"


class HitFields(AdapterParams):
    """``fields:``: dotted paths inside one hit (``$``: the hit itself; null: the hit has none)."""

    id: str | None = Field("id", description="the hit's id (required in every hit unless null)")
    score: str | None = Field("score", description="higher is better (required unless null: then rank order is used)")
    text: str | None = Field("text", description="the chunk's text (optional unless set here)")
    metadata: str | None = Field("metadata", description="an object of the hit's metadata; '$': the hit itself")

    @field_validator("id", "score", "text", "metadata")
    @classmethod
    def _is_path(cls, value: str | None) -> str | None:
        if value is not None:
            compile_path(value)
        return value


class HttpParams(TextHitsParams):
    """Parameters of ``adapter: http`` (see the module docstring)."""

    url: str = Field(..., min_length=1, description="http(s) URL of the search endpoint; may hold {query}, {top_k}, ${ENV}")
    method: Literal["POST", "GET"] = Field("POST", description="POST sends the body; GET sends none")
    headers: dict[str, str] = Field(default_factory=dict, description='request headers; "${ENV_VAR}" is read from the environment')
    body: Any = Field(None, description='JSON template: "{query}", "{queries}" (a list), "{top_k}" are replaced')
    hits: str = Field("hits", description="path to the hit list in a response (a batch: the list of lists, or 'x.*.hits')")
    fields: HitFields = Field(default_factory=lambda: HitFields.model_validate({}), description="paths inside one hit")
    scores: Scores = Field("similarity", description=f"fields.score's meaning: {SCORES_HELP}")
    timeout: float = Field(30.0, gt=0, le=3600, description="seconds a whole request may take (connecting to the last byte)")
    retries: int = Field(2, ge=0, le=10, description="tries again after a connection error, 429 or 5xx")
    backoff: float = Field(0.5, ge=0, le=MAX_WAIT_S, description="seconds before the first retry, doubled for each next")
    concurrency: int = Field(4, ge=1, le=256, description="requests in flight at once")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            # A whole message (RetrieverError): the validator's own "got VALUE" would repeat the URL unmasked.
            raise RetrieverError(
                f"must be an http:// or https:// URL with a host, got {shown_url(value)!r}"
            )
        return value

    @field_validator("hits")
    @classmethod
    def _hits_path(cls, value: str) -> str:
        compile_path(value)
        return value

    @field_validator("headers")
    @classmethod
    def _header_lines(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
                raise ValueError(f"header name {name!r} is not a valid HTTP header name")
            if "\n" in text or "\r" in text:
                raise ValueError(f"header {name!r} holds a line break; give its value on one line")
        return value

    @model_validator(mode="after")
    def _template_fits(self) -> HttpParams:
        try:
            json.dumps(self.body, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ValueError(f"body must be plain JSON (objects, lists, strings, numbers): {error}") from None
        if self.method == "GET" and self.body is not None:
            raise ValueError("method GET sends no body: put {query} in url (it is URL-encoded), or use method POST")
        if self.method == "GET" and self.batch_size > 1:
            raise ValueError("batch_size > 1 sends the queries as a list in the body: use method POST, or batch_size: 1")
        partial = [text for text in strings(self.body) if QUERIES in text and text != QUERIES]
        if partial:
            raise ValueError(f'body: "{QUERIES}" becomes a JSON list, so it must be a whole string value, not {partial[0]!r}')
        template = self.template()
        if self.batched():
            if QUERY in self.url or any(QUERY in text for text in strings(template)):
                raise ValueError(f'body holds "{QUERIES}" (a batch): remove "{QUERY}" from body and url')
        elif self.batch_size > 1:
            raise ValueError(
                f'batch_size {self.batch_size} sends several queries per request: put "{QUERIES}" in body '
                "(it becomes the list of query texts), or set batch_size: 1"
            )
        elif QUERY not in self.url and not any(QUERY in text for text in strings(template)):
            raise ValueError(f'neither url nor body holds "{QUERY}": the service would never see the query')
        return self

    def batched(self) -> bool:
        """Whether a request carries a list of queries (``{queries}`` in the body)."""
        return any(text == QUERIES for text in strings(self.template()))

    def template(self) -> Any:
        """The body template: as given, or the default ({query, top_k}, or {queries, top_k} when batch_size > 1)."""
        if self.body is not None or self.method == "GET":
            return self.body
        if self.batch_size > 1:
            return {"queries": QUERIES, "top_k": TOP_K}
        return {"query": QUERY, "top_k": TOP_K}


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return []
