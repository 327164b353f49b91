"""The public API is what ``rag_eval.__all__`` lists: pinned, so a change to it is deliberate."""

from __future__ import annotations

import rag_eval

PUBLIC = [
    "EvaluationOptions",
    "Metric",
    "RagEvalError",
    "Results",
    "combined_dataframe",
    "evaluate",
    "evaluate_evidence",
    "parse_metric",
    "parse_metrics",
    "ranked_ids",
]

EXTENSION = [
    "AdapterParams",
    "Chunk",
    "Corpus",
    "EmbeddingBridge",
    "EmbeddingStore",
    "ExecutionSpec",
    "JudgeGrade",
    "Queries",
    "Ranking",
    "Retriever",
    "build_chunker",
    "chunker_function",
    "config_corpus",
    "encode_on_ray",
    "judge_factory",
    "passage_text",
    "retriever_factory",
]


def test_all_is_pinned_and_sorted():
    assert rag_eval.__all__ == PUBLIC
    assert rag_eval.__all__ == sorted(rag_eval.__all__)


def test_every_public_name_exists_and_is_documented():
    for name in rag_eval.__all__:
        obj = getattr(rag_eval, name)
        assert (obj.__doc__ or "").strip(), f"rag_eval.{name} has no docstring"


def test_the_extension_api_is_pinned_sorted_and_documented():
    import rag_eval.extend as extend

    assert extend.__all__ == EXTENSION == sorted(EXTENSION)
    aliases = {"Corpus", "Queries", "Ranking"}  # type aliases: documented in the module's docstring
    for name in extend.__all__:
        assert name in (extend.__doc__ or ""), f"rag_eval.extend.{name} is not named in the module's docstring"
        if name not in aliases:
            assert (getattr(extend, name).__doc__ or "").strip(), f"rag_eval.extend.{name} has no docstring"


def test_importing_the_public_api_loads_no_heavy_library():
    import subprocess
    import sys

    code = (
        "import sys, rag_eval; heavy = ('torch', 'ray', 'matplotlib', 'faiss', 'pandas', 'scipy', 'transformers', "
        "'onnxruntime', 'openvino', 'sentence_transformers'); print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
