"""The files a document run writes beside its results: a MaxP document run per retriever, the document
qrels, and chunk rankings that replay (static adapter) to the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
METRICS = ["doc_ndcg@3", "doc_recall@5", "evidence_recall@3", "evidence_precision@3", "evidence_iou@3",
           "evidence_recall@400chars", "evidence_recall@60tokens", "ndcg@3"]


def write_config(folder: Path, name: str, retrievers: str, chunking: str = "") -> Path:
    config = folder / f"{name}.yaml"
    config.write_text(
        f"dataset: {{path: {REPO / 'datasets' / 'ocean_documents.yaml'}}}\n{chunking}retrievers:\n{retrievers}"
        f"top_k: 10\nmetrics: {json.dumps(METRICS)}\noutput: {folder / name}\n",
        encoding="utf-8",
    )
    return config


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("documents_outputs")
    config = write_config(
        folder, "first",
        "  - {label: chunks, adapter: bm25, chunker: words}\n  - {label: whole, adapter: bm25}\n",
        "chunking:\n  words: {method: fixed, size: 30, overlap: 10}\n",
    )
    assert main(["run", str(config), "--no-progress"]) == 0
    return folder / "first"


def aggregate(path: Path) -> dict[str, float]:
    return json.loads(path.read_text(encoding="utf-8"))["results"]["aggregate"]


def test_document_runs_and_qrels_give_the_doc_metrics_with_the_plain_evaluator(first_run, capsys):
    qrels = (first_run / "documents.qrels").read_text(encoding="utf-8").splitlines()
    assert "q-largest-ocean\t0\toceans/pacific.md\t2" in qrels
    for label in ("chunks", "whole"):
        capsys.readouterr()
        code = main(["evaluate", "--qrels", str(first_run / "documents.qrels"),
                     "--run", str(first_run / f"{label}.docs.trec"), "-m", "ndcg@3", "-m", "recall@5",
                     "--format", "json"])
        assert code == 0
        printed = json.loads(capsys.readouterr().out)["aggregate"]
        expected = aggregate(first_run / f"{label}.json")
        assert printed["ndcg@3"] == pytest.approx(expected["doc_ndcg@3"], abs=1e-12)
        assert printed["recall@5"] == pytest.approx(expected["doc_recall@5"], abs=1e-12)


def test_the_document_run_ranks_each_document_at_its_best_chunk(first_run):
    chunk_lines = [line.split("\t") for line in (first_run / "chunks.run").read_text().splitlines()]
    doc_lines = [line.split("\t") for line in (first_run / "chunks.docs.trec").read_text().splitlines()]
    for qid in {line[0] for line in chunk_lines}:
        seen: list[str] = []
        for _, _, chunk, *_ in (line for line in chunk_lines if line[0] == qid):
            doc = chunk.rsplit("#", 1)[0]
            if doc not in seen:
                seen.append(doc)
        assert [line[2] for line in doc_lines if line[0] == qid] == seen


@pytest.mark.parametrize("label", ["chunks", "whole"])
def test_a_stored_chunk_ranking_replays_to_the_same_numbers(first_run, label, tmp_path):
    config = write_config(
        tmp_path, "replay", f"  - {{label: replay, adapter: static, params: {{path: {first_run / f'{label}.run'}}}}}\n"
    )
    assert main(["run", str(config), "--no-progress"]) == 0
    replayed, original = aggregate(tmp_path / "replay" / "replay.json"), aggregate(first_run / f"{label}.json")
    # Replayed spans are the retriever's own: every document and evidence metric, no chunk-level one.
    assert replayed == {name: value for name, value in original.items() if name != "ndcg@3"}


def test_evaluate_refuses_document_metrics_on_a_trec_run(first_run, capsys):
    code = main(["evaluate", "--qrels", str(first_run / "documents.qrels"), "--run", str(first_run / "chunks.run"),
                 "-m", "doc_ndcg@3"])
    assert code == 2
    assert capsys.readouterr().err == (
        "rag-eval: error: metric doc_ndcg@3: document metrics need documents and spans; evaluate scores a TREC run "
        "as it is: run a config with a dataset of documents (rag-eval run), or score the document run "
        "<label>.docs.trec that rag-eval run writes against documents.qrels with the plain metric\n"
    )


def test_token_budgets_count_the_evaluation_tokenizer_for_every_chunking(tmp_path):
    """Two chunkers with different tokenizers: the budget counts evaluation.tokenizer (words) for both."""
    from rag_eval import evaluate_evidence
    from rag_eval._core.tokens import count_words
    from rag_eval._data.datasets import load_dataset

    config = tmp_path / "budget.yaml"
    config.write_text(
        f"dataset: {{path: {REPO / 'datasets' / 'ocean_documents.yaml'}}}\n"
        "chunking:\n  words: {method: fixed, size: 30}\n"
        "  minilm: {method: fixed, size: 30, tokenizer: all-MiniLM-L6-v2}\n"
        "retrievers:\n  - {label: a, adapter: bm25, chunker: words}\n  - {label: b, adapter: bm25, chunker: minilm}\n"
        f"metrics: [evidence_recall@60tokens]\noutput: {tmp_path / 'out'}\n",
        encoding="utf-8",
    )
    assert main(["run", str(config), "--no-progress"]) == 0
    dataset = load_dataset({"path": str(REPO / "datasets" / "ocean_documents.yaml")})
    for label in ("a", "b"):
        written = json.loads((tmp_path / "out" / f"{label}.json").read_text(encoding="utf-8"))
        assert written["results"]["options"]["budget_tokens"] == "words"
        spans = {q: [(*c.rsplit("#", 1)[0:1], *map(int, c.rsplit("#", 1)[1].split("-")), s) for c, s, _ in r]
                 for q, r in written["rankings"].items()}
        expected = evaluate_evidence(dataset.evidence, spans, ["evidence_recall@60tokens"],
                                     documents=dataset.documents, count_tokens=count_words)
        assert written["results"]["aggregate"]["evidence_recall@60tokens"] == pytest.approx(
            expected.aggregate["evidence_recall@60tokens"], abs=1e-12)


def test_passages_read_as_documents_refuse_evidence_and_chunk_metrics(tmp_path, capsys):
    qs = tmp_path / "qs.yaml"
    qs.write_text("corpus:\n  - {id: p1, text: The Pacific is the largest ocean.}\n"
                  "queries:\n  - {id: q1, text: largest ocean, judgements: {p1: 1}}\n", encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text("dataset: {path: qs.yaml, as_documents: true}\nchunking: {w: {method: fixed, size: 3}}\n"
                      "retrievers: [{label: b, adapter: bm25, chunker: w}]\n"
                      "metrics: [doc_ndcg@10, ndcg@10, evidence_recall@5]\n", encoding="utf-8")
    assert main(["validate", str(config)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{config}: metric ndcg@10: chunk-level metrics need evidence spans, and the dataset 'qs' has none (its "
        "judgements are on whole documents); use doc_ metrics such as doc_ndcg@10",
        f"{config}: metric evidence_recall@5: evidence metrics need evidence spans, and the dataset 'qs' has none "
        "(its judgements are on whole documents); use doc_ metrics such as doc_ndcg@10",
        "rag-eval: 2 problems found",
    ]


def test_the_default_main_metric_is_the_first_ndcg_of_any_level():
    from rag_eval._data.config.schema import RunConfig

    base = {"dataset": {"path": "x.yaml"}, "retrievers": [{"label": "b", "adapter": "bm25"}]}
    assert RunConfig.model_validate({**base, "metrics": ["evidence_recall@5", "doc_ndcg@10", "ndcg@10"]}
                                    ).primary_metric == "doc_ndcg@10"
    assert RunConfig.model_validate({**base, "metrics": ["recall@5", "ndcg@10"]}).primary_metric == "ndcg@10"


def test_options_are_compared_only_where_a_gated_metric_reads_them(first_run, tmp_path, capsys):
    data = json.loads((first_run / "chunks.json").read_text(encoding="utf-8"))
    data["results"]["options"].update(budget_tokens="all-MiniLM-L6-v2", min_evidence_fraction=0.5)
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    base = str(first_run / "chunks.json")
    assert main(["compare", base, str(other), "--gate", "evidence_recall@3", "--gate", "doc_ndcg@3"]) == 0
    capsys.readouterr()
    assert main(["compare", base, str(other), "--gate", "evidence_recall@60tokens"]) == 2
    assert capsys.readouterr().err == (
        f"rag-eval: error: incomparable results: different metric semantics: budget_tokens is 'words' in the "
        f"baseline {base} and 'all-MiniLM-L6-v2' in the candidate {other}, and evidence_recall@60tokens depends on it\n"
    )
    assert main(["compare", base, str(other), "--gate", "ndcg@3"]) == 2
    assert "min_evidence_fraction is 0.0 in the baseline" in capsys.readouterr().err


def test_the_paragraph_spans_example_runs_and_its_spans_are_the_paragraphs(tmp_path, capsys):
    """docs/examples/paragraph_spans.yaml, as docs/plugins.md says to run it: the plug-in's own spans are scored."""
    from rag_eval import evaluate_evidence
    from rag_eval._data.datasets import load_dataset

    config = REPO / "docs" / "examples" / "paragraph_spans.yaml"
    assert main(["run", str(config), "--output", str(tmp_path), "--no-progress"]) == 0
    capsys.readouterr()
    written = json.loads((tmp_path / "paragraphs.json").read_text(encoding="utf-8"))
    assert written["chunking"]["kind"] == "own"
    dataset = load_dataset({"path": str(REPO / "datasets" / "ocean_documents.yaml")})
    spans: dict[str, list] = {}
    for line in (tmp_path / "paragraphs.run").read_text(encoding="utf-8").splitlines():
        qid, _, chunk, _, score, _ = line.split("\t")
        doc, _, offsets = chunk.rpartition("#")
        start, end = map(int, offsets.split("-"))
        text = dataset.documents[doc][start:end]
        # Each span is a paragraph (or a piece of one): never across a blank line, no space at either end here.
        assert "\n\n" not in text and text == text.strip()
        spans.setdefault(qid, []).append((doc, start, end, float(score)))
    names = written["results"]["metrics"]
    expected = evaluate_evidence(dataset.evidence, spans, names, documents=dataset.documents,
                                 document_judgements=dataset.document_judgements)
    for name in names:
        assert written["results"]["aggregate"][name] == pytest.approx(expected.aggregate[name], abs=1e-12)


def test_zero_policy_notes_count_the_queries_without_evidence_for_evidence_metrics():
    from rag_eval import evaluate_evidence
    from rag_eval._report.format import mean_notes

    evidence = {"q1": [("d", 0, 5, 1)]}
    judgements = {"q1": {"d": 1}, "q2": {"d": 1}}  # q2: a relevant document, but no evidence span
    results = evaluate_evidence(evidence, {"q1": [("d", 0, 5, 1.0)], "q2": [("d", 0, 5, 1.0)]},
                                ["evidence_recall@1", "doc_ndcg@1"], document_judgements=judgements,
                                no_relevant="zero")
    assert mean_notes(results, "evidence_recall@1", judgements, evidence) == [
        "1 judged query with no evidence scored 0 (no_relevant: zero)"
    ]
    assert mean_notes(results, "doc_ndcg@1", judgements, evidence) == []
