"""Secrets kept out of what rag_eval prints and writes: one rule, in one place.

A config's retriever params are copied into every results file (``retriever.params`` and the
resolved config) and shown in the report, so whatever may hold a credential is masked there:

- a URL (``scheme://...``): an ``http(s)`` URL loses its user, password and query-string values
  (:func:`shown_url`: ``https://host/search?api_key=...``); any other
  scheme (``postgresql://``, ``redis://``...) keeps its user and loses its password
  (``postgresql://alice:***@db/x``) and the value of a ``password=`` query parameter;
- a ``key=value`` connection string (libpq's ``host=db password='a b'``): ``password=***``;
- under a key named ``headers``: every header value, unless it is only ``${NAME}`` references
  (read from the environment when the run starts, never written), optionally after an auth
  scheme word (``Bearer ${TOKEN}``);
- under a key that names a secret (``password``, ``passwd``, ``secret``, ``token``, ``api_key``,
  ``apikey``, ``access_key``, ``private_key``, ``credentials``; not ``*_env``, which holds a variable's
  name): the value, as ``***``.

``${NAME}`` references are kept everywhere: they name a variable, not its value. In free text (an
error message quoting a URL), :func:`without_userinfo` hides the user and password of every URL.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

MASK = "***"


# ``scheme://user:password@`` anywhere in a text: the user and password of a URL.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@")


def without_userinfo(text: str) -> str:
    """``text`` with the user and password of every URL in it replaced by ``***`` (``http://***@host/v1``)."""
    return _USERINFO.sub(r"\1***@", text)


def shown_url(url: str) -> str:
    """``url`` for messages and results: no user or password, no query-string values."""
    try:
        parts = urllib.parse.urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        query = "&".join(f"{item.partition('=')[0]}=..." for item in parts.query.split("&") if item) if parts.query else ""
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return "<an unreadable URL>"


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_USERINFO_PASSWORD = re.compile(r"(://[^:/@?#\s]*):([^@/?#\s]+)@")
# password=VALUE in a query string or a key=value DSN; VALUE quoted ('a b', "a b") or up to & or a space.
_PASSWORD_PAIR = re.compile(r"""(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^&\s]*)""", re.IGNORECASE)
_ENV_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_AUTH_SCHEMES = {"bearer", "basic", "token", "digest", "apikey", "api-key", "key", "bot"}
_SECRET_KEY = re.compile(
    r"(?:\w*[_-])?(?:password|passwd|secret|token|api_?key|access_?key|private_?key|credentials?)", re.IGNORECASE
)


def mask_text(text: str) -> str:
    """``text`` with any credential it holds as a URL or a connection string masked (see the module docstring)."""
    stripped = text.strip()
    if _SCHEME.match(stripped):
        scheme = stripped.partition(":")[0].lower()
        if scheme in ("http", "https"):
            return shown_url(stripped)
        return _PASSWORD_PAIR.sub(lambda m: m.group(1) + MASK, _USERINFO_PASSWORD.sub(r"\1:" + MASK + "@", text))
    return _PASSWORD_PAIR.sub(lambda m: m.group(1) + MASK, text)


def secrets_in(text: str) -> list[str]:
    """The credential values :func:`mask_text` would hide in ``text`` (to scrub them from a library's error message)."""
    found: list[str] = []
    stripped = text.strip()
    if _SCHEME.match(stripped):
        try:
            parts = urllib.parse.urlsplit(stripped)
        except ValueError:
            parts = None
        if parts is not None:
            if parts.password:
                found += [parts.password, urllib.parse.unquote(parts.password)]
            if parts.scheme.lower() in ("http", "https"):
                for _, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=False):
                    found.append(value)
    for value in _PASSWORD_PAIR.findall(text):
        raw = value[1]
        found += [raw, raw[1:-1] if raw[:1] in "'\"" and len(raw) >= 2 else raw]
    return sorted({value for value in found if value and value != MASK}, key=len, reverse=True)


def scrub(message: str, *sources: str | None) -> str:
    """``message`` with every credential value found in ``sources`` (a DSN, a URL) replaced by ``***``."""
    for source in sources:
        if source:
            for secret in secrets_in(source):
                message = message.replace(secret, MASK)
    return message


def masked_header(value: Any) -> Any:
    """A header value as it may be written: kept when it is only ``${NAME}`` references (after an auth scheme word)."""
    if not isinstance(value, str):
        return MASK
    if _ENV_REFERENCE.search(value):
        rest = _ENV_REFERENCE.sub(" ", value).split()
        if not rest or (len(rest) == 1 and rest[0].lower() in _AUTH_SCHEMES and value.lstrip().startswith(rest[0])):
            return value
    return MASK


def masked(value: Any, key: str | None = None) -> Any:
    """A copy of ``value`` (params, a config: mappings, lists, strings) with its credentials masked."""
    if isinstance(value, Mapping):
        if key is not None and key.lower() == "headers":
            return {name: masked_header(item) for name, item in value.items()}
        return {name: masked(item, str(name)) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [masked(item, key) for item in value]
    if isinstance(value, str):
        if key is not None and _SECRET_KEY.fullmatch(key) and not key.lower().endswith("_env"):
            return value if _ENV_REFERENCE.fullmatch(value.strip()) else MASK
        return mask_text(value)
    return value
