"""An exported graph opened for inference: an ONNX Runtime session or an OpenVINO compiled model, as one callable.

onnxruntime and openvino are imported here only when a graph is opened; a missing one is
one line naming the extra to install.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.errors import RetrieverError
from rag_eval._core.versions import install_extra

#: ONNX Runtime fusions never applied. SkipLayerNormFusion: ONNX Runtime's SkipLayerNormalization CPU
#: kernel took 0.54 ms where Add + LayerNormalization took 0.10 (one 256 x 384 input, one thread, 1.32):
#: 19% of MiniLM's int8 time. The exported graph keeps them apart too (export._fuse). The list changes the
#: numbers: a change to it bumps export.EXPORT_FORMATS["onnx"] (the embedding caches' key).
DISABLED_FUSIONS = ("SkipLayerNormFusion",)


def require_runtime(backend: str, adapter: str) -> None:
    """A RetrieverError naming the extra to install when ``backend``'s runtime cannot be imported."""
    module = {"onnx": "onnxruntime", "openvino": "openvino"}[backend]
    try:
        __import__(module)
    except ImportError as error:
        raise RetrieverError(
            f"{adapter}: backend {backend} needs {module}, which is not installed ({error}); "
            f"{install_extra(backend)}"
        ) from error


def ort_session(path: Path, threads: int, save_optimized: Path | None = None) -> Any:
    """An ONNX Runtime CPU session over the graph at ``path``, as rag_eval runs every ONNX graph.

    ``threads``: its intra-op threads (0: ONNX Runtime's choice). ``save_optimized``: also write the
    graph as ONNX Runtime optimised it, to see which kernels run.
    """
    import onnxruntime as ort

    settings = ort.SessionOptions()
    settings.intra_op_num_threads = threads
    settings.inter_op_num_threads = 1
    settings.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Spinning workers burn the CPU another stream (or another process) could use.
    settings.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if save_optimized is not None:
        settings.optimized_model_filepath = str(save_optimized)
    return ort.InferenceSession(
        str(path), settings, providers=["CPUExecutionProvider"], disabled_optimizers=list(DISABLED_FUSIONS)
    )


def open_graph(
    folder: Path, manifest: dict[str, Any], backend: str, threads: int, streams: int
) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """A thread-safe ``feeds -> graph output`` callable over the exported graph."""
    per_stream = max(1, threads // streams)
    if backend == "onnx":
        session = ort_session(folder / manifest["files"][0]["name"], per_stream)
        output = manifest["output"]
        return lambda feeds: session.run([output], feeds)[0]
    import openvino as ov

    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": streams, "INFERENCE_PRECISION_HINT": "f32"}
    compiled = core.compile_model(core.read_model(str(folder / "model.xml")), "CPU", config)
    local = threading.local()  # one infer request per worker thread: a request is not re-entrant

    def infer(feeds: dict[str, np.ndarray]) -> np.ndarray:
        request = getattr(local, "request", None)
        if request is None:
            request = local.request = compiled.create_infer_request()
        return request.infer(feeds)[compiled.output(0)].copy()

    return infer
