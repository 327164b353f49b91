"""Exported models (ONNX, ONNX int8, OpenVINO IR) cached on disk for the exported backends.

``cached_export`` returns ``<export_dir>/<model identity>-<backend>-<quantize>/`` (model
file(s) + ``manifest.json`` with sizes and sha256 of every file), built offline from the
local model folder in a temporary folder renamed into place, so a killed export leaves
nothing half-written and concurrent processes never see a partial one. A damaged entry is
rebuilt with an :class:`ExportCacheWarning`. Every export is checked against torch on
probe texts before it is stored (fp32: last hidden state within 1e-3; a fused graph that
fails falls back to the plain one). torch, onnx, onnxruntime and openvino are imported
only while an export is built or checked.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import os
import secrets
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.atomic import write_new_file
from rag_eval._core.errors import RetrieverError
from rag_eval._core.files import MiB, check_input_file
from rag_eval._core.messages import error_line
from rag_eval._core.versions import package_version
from rag_eval._models import files as _models
from rag_eval._models.embeddings.graph_session import ort_session
from rag_eval._models.embeddings.pipeline import PROBES, Pipeline, pool_hidden
from rag_eval._models.embeddings.store import EmbeddingCacheWarning

#: Per backend: bump one when its export recipe changes (it changes the numbers, so it is part of the
#: cache key). onnx 2: the residual Add and the LayerNormalization kept apart (no SkipLayerNormalization).
EXPORT_FORMATS = {"onnx": 2, "openvino": 1}
ONNX_OPSET = 17
# fp32 export check: max abs difference of the last hidden state against torch (measured ~2e-6).
_FP32_TOLERANCE = 1e-3


class ExportCacheWarning(EmbeddingCacheWarning):
    """A cached exported model was damaged or could not be written; it is rebuilt / kept in memory only."""


def cached_export(
    model_folder: Path,
    pipeline: Pipeline,
    identity: str,
    backend: str,
    quantize: str,
    export_dir: Path | None,
    adapter: str,
    tokenizer: Any,
    kind: str = "embeddings",
) -> tuple[Path, str, dict[str, Any]]:
    """``(folder, status, manifest)`` of the exported graph, built when missing or damaged.

    ``status``: ``hit`` (reused), ``built``, ``rebuilt`` (a damaged entry was replaced)
    or ``temporary`` (``export_dir`` is None or not writable: built in a temporary
    folder that the caller removes once the graph is loaded).
    """
    name = f"{identity}-{backend}-{quantize}" + ("" if kind == "embeddings" else f"-{kind}")
    expected = {
        "format": EXPORT_FORMATS[backend],
        "model_identity": identity,
        "backend": backend,
        "quantize": quantize,
        "kind": kind,
    }
    build = functools.partial(
        build_export, model_folder, pipeline, backend, quantize, expected=expected, adapter=adapter, tokenizer=tokenizer
    )
    if export_dir is not None:
        final = Path(export_dir) / name
        status = "built"
        if final.exists() or final.is_symlink():
            problem = check_export(final, expected)
            if problem is None:
                return final, "hit", _read_manifest(final)
            warnings.warn(
                f"exported model {final} is unusable ({problem}); rebuilding it", ExportCacheWarning, stacklevel=4
            )
            _discard(final)
            status = "rebuilt"
        try:
            return final, status, _build_in_place(final, expected, build)
        except OSError as error:  # read-only or full disk: this run still gets its model
            warnings.warn(
                f"cannot write exported models to {export_dir} ({error}); exporting to a temporary "
                "folder for this run only",
                ExportCacheWarning,
                stacklevel=4,
            )
    staging = Path(tempfile.mkdtemp(prefix="rag_eval_export_"))
    try:
        return staging, "temporary", build(out=staging)
    except OSError as error:
        raise RetrieverError(
            f"{adapter}: cannot export the model to a temporary folder ({error}); free some disk space or set TMPDIR"
        ) from error
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _build_in_place(final: Path, expected: dict[str, Any], build: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """Build in a temporary folder beside ``final``, then rename it into place (atomic: all or nothing)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name[:16]}-", dir=final.parent))
    try:
        manifest = build(out=staging)
        try:
            os.rename(staging, final)
        except OSError:
            if check_export(final, expected) is not None:
                raise
            return _read_manifest(final)  # another process renamed its complete export first: use that one
        return manifest
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def check_export(folder: Path, expected: dict[str, Any]) -> str | None:
    """None when ``folder`` holds a complete export matching ``expected``, else what is wrong."""
    if folder.is_symlink() or not folder.is_dir():
        return "not a folder"
    try:
        manifest = _read_manifest(folder)
    except (OSError, ValueError, RetrieverError) as error:
        return f"manifest.json: {error}"
    if manifest.get("format") != expected["format"]:  # an upgrade (or a downgrade), not damage
        return (
            f"exported by another version of rag_eval: export format {manifest.get('format')!r}, "
            f"this one uses {expected['format']!r}"
        )
    for key, value in expected.items():
        if manifest.get(key) != value:
            return f"manifest {key} is {manifest.get(key)!r}, expected {value!r}"
    files = manifest.get("files")
    if not isinstance(files, list) or not files:
        return "manifest lists no files"
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or "/" in entry["name"]:
            return f"manifest file entry {entry!r} is malformed"
        path = folder / entry["name"]
        try:
            info = os.lstat(path)
        except OSError:
            return f"{path.name} is missing"
        if not path.is_file() or path.is_symlink():
            return f"{path.name} is not a regular file"
        if info.st_size != entry.get("size"):
            return f"{path.name} has {info.st_size} bytes, expected {entry.get('size')}"
        if _models.file_digest(path) != entry.get("sha256"):
            return f"{path.name} checksum differs"
    return None


def _read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / "manifest.json"
    check_input_file(path, "export manifest", max_bytes=MiB)  # a FIFO here must not hang the run
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(manifest, dict):
        raise ValueError("not a JSON object")
    return manifest


def _discard(folder: Path) -> None:
    # Renamed first so no reader ever opens a half-deleted export, then removed.
    aside = folder.with_name(f".damaged-{folder.name[:16]}-{secrets.token_hex(4)}")
    try:
        os.rename(folder, aside)
    except OSError:
        return  # another process moved it already
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def build_export(
    model_folder: Path,
    pipeline: Pipeline,
    backend: str,
    quantize: str,
    *,
    out: Path,
    expected: dict[str, Any],
    adapter: str,
    tokenizer: Any,
) -> dict[str, Any]:
    """Export, optimise / quantise / convert into ``out``, check against torch, write the manifest last."""
    kind = expected["kind"]
    with tempfile.TemporaryDirectory(prefix="rag_eval_onnx_") as work:
        plain = Path(work) / "plain.onnx"
        probe = _export_graph(pipeline, plain, tokenizer, adapter, kind)
        fused = False
        if backend == "onnx":
            graph = plain
            candidate = _fuse(plain, Path(work) / "fused.onnx", pipeline.transformer)
            if candidate is not None and _max_error(_ort_infer(candidate)(probe["feeds"]), probe) <= _FP32_TOLERANCE:
                graph, fused = candidate, True
            target = out / "model.onnx"
            if quantize == "int8":
                _quantize(graph, target)
            else:
                shutil.copyfile(graph, target)
            output = _ort_infer(target)(probe["feeds"])
            names = ["model.onnx"]
        else:
            import openvino as ov

            ov.save_model(ov.convert_model(str(plain)), str(out / "model.xml"), compress_to_fp16=False)
            output = _ov_infer(out / "model.xml")(probe["feeds"])
            names = ["model.xml", "model.bin"]
        error = _max_error(output, probe)
        if quantize == "none" and error > _FP32_TOLERANCE:
            raise RetrieverError(
                f"{adapter}: the {backend} export of {model_folder} differs from torch by {error:.2g} "
                f"(tolerance {_FP32_TOLERANCE}); use backend: torch for this model"
            )
    manifest = {
        **expected,
        "model_folder": str(model_folder),
        "inputs": probe["inputs"],
        "output": probe["output"],
        "opset": ONNX_OPSET,
        "fused": fused,
        "probe_max_abs_error": error,
        "versions": _versions(backend),
        "files": [_file_entry(out / name) for name in names],
    }
    if kind == "embeddings":
        manifest["probe_min_cosine"] = _min_cosine(output, probe, pipeline)
    data = json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")

    write_new_file(out / "manifest.json", data)
    return manifest


def _export_graph(pipeline: Pipeline, target: Path, tokenizer: Any, adapter: str, kind: str) -> dict[str, Any]:
    """``torch.onnx.export`` of the transformer (``embeddings``: its last hidden state; ``scores``: the
    sequence classifier's logits); returns the probe inputs and torch's outputs on them."""

    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification

    loader = AutoModel if kind == "embeddings" else AutoModelForSequenceClassification
    output = "last_hidden_state" if kind == "embeddings" else "logits"
    try:
        # .float(): a model saved in fp16 / bf16 loads in that dtype; the graph is fp32 (int8 quantises from it).
        model = loader.from_pretrained(
            str(pipeline.transformer), local_files_only=True, attn_implementation="eager"
        ).float().eval()
    except Exception as error:  # transformers' errors are long; one line is enough
        raise RetrieverError(
            f"{adapter}: cannot load the transformer in {pipeline.transformer} for export: {error_line(error)}"
        ) from error
    accepted = set(inspect.signature(model.forward).parameters)
    names: list[str] = [
        n
        for n in ("input_ids", "attention_mask", "token_type_ids")
        if n in accepted and (n != "token_type_ids" or "token_type_ids" in tokenizer.model_input_names)
    ]

    def tokens(texts: Sequence[str]) -> dict[str, np.ndarray]:
        pairs = (list(reversed(texts)),) if kind == "scores" else ()  # a cross-encoder reads (query, passage)
        encoded = tokenizer(
            list(texts),
            *pairs,
            truncation="longest_first",
            padding=True,
            return_tensors="np",
            max_length=min(tokenizer.model_max_length, 512),
        )
        return {n: np.asarray(encoded[n], dtype=np.int64) for n in names if n in encoded}

    # Traced on 2 short texts, checked on the probes (other batch size and lengths): dynamic axes really work.
    trace, feeds = tokens(PROBES[1:3]), tokens(PROBES)
    names = list(feeds)

    class Wrapper(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            return getattr(self.inner(**dict(zip(names, args))), output)

    wrapper = Wrapper(model)
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "sequence"} for n in names}
    axes[output] = {0: "batch", 1: "sequence"} if kind == "embeddings" else {0: "batch"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about shapes; the probe check is the real test
        reference = wrapper(*(torch.from_numpy(feeds[n]) for n in names)).float().numpy()
        torch.onnx.export(
            wrapper,
            tuple(torch.from_numpy(trace[n]) for n in names),
            str(target),
            input_names=names,
            output_names=[output],
            dynamic_axes=axes,
            opset_version=ONNX_OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    return {"inputs": names, "output": output, "feeds": feeds, "hidden": reference}


def _fuse(plain: Path, target: Path, transformer: Path) -> Path | None:
    """ONNX Runtime's transformer fusions (attention, bias-gelu; not skip-layer-norm); None when they do not apply."""
    try:
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        options = FusionOptions("bert")
        options.enable_skip_layer_norm = False  # its kernel is slow (graph_session.DISABLED_FUSIONS)
        config = json.loads((transformer / "config.json").read_text(encoding="utf-8"))
        heads, hidden = int(config.get("num_attention_heads", 0)), int(config.get("hidden_size", 0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = optimize_model(
                str(plain),
                model_type="bert",
                num_heads=heads,
                hidden_size=hidden,
                opt_level=0,
                optimization_options=options,
            )  # python fusions only: level 1 costs 2.5 s, no speed
            optimized.save_model_to_file(str(target))
        return target
    except Exception:  # an architecture the fusions do not know: the plain graph is used
        return None


def _quantize(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with warnings.catch_warnings(), _quiet_root_logger("pre-processing before quantization"):
        warnings.simplefilter("ignore")
        # Per-channel weights: per-tensor scales cost far more accuracy (min cosine 0.90 vs 0.988 on MiniLM).
        # DefaultTensorType: fused com.microsoft nodes have no inferred output type.
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )


@contextmanager
def _quiet_root_logger(text: str) -> Iterator[None]:
    """Drop one advice message that onnxruntime logs on the root logger (the rest still shows)."""

    def keep(record: logging.LogRecord) -> bool:
        return text not in record.getMessage()

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)


def _ort_infer(path: Path) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    session = ort_session(path, 0)
    return lambda feeds: session.run(None, feeds)[0]


def _ov_infer(path: Path) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return lambda feeds: compiled(feeds)[compiled.output(0)]


def _max_error(output: np.ndarray, probe: dict[str, Any]) -> float:
    """Largest difference to torch's output (hidden states: over real, unpadded tokens only)."""
    output = np.asarray(output, dtype=np.float32)
    mask = probe["feeds"].get("attention_mask") if output.ndim == 3 else None
    weights = mask[..., None] if mask is not None else 1
    return float(np.abs((output - probe["hidden"]) * weights).max())


def _min_cosine(hidden: np.ndarray, probe: dict[str, Any], pipeline: Pipeline) -> float:
    """Smallest cosine between our pooled probe embeddings and torch's (recorded for int8)."""
    feeds = probe["feeds"]
    mask = feeds.get("attention_mask", np.ones_like(feeds["input_ids"]))
    got = pool_hidden(np.asarray(hidden, dtype=np.float32), mask, pipeline.pooling, True)
    want = pool_hidden(probe["hidden"], mask, pipeline.pooling, True)
    return float((got * want).sum(axis=1).min())


def _file_entry(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with open(path, "rb+") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
        os.fsync(handle.fileno())  # durable before the folder is renamed into place
    return {"name": path.name, "size": path.stat().st_size, "sha256": digest.hexdigest()}


def _versions(backend: str) -> dict[str, str]:
    names = ["torch", "transformers", "onnx"] + (["onnxruntime"] if backend == "onnx" else ["openvino"])
    found = {name: package_version(name) for name in names}
    return {name: version for name, version in found.items() if version is not None}
