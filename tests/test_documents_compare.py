"""`rag-eval compare` and regression gates between runs of one document dataset under different chunkings.

Document (`doc_`) and evidence metrics judge every chunking by the same documents and evidence,
so they may be gated across chunkings; chunk-level metrics build their ideal ranking from each
chunking's own chunks, so a chunk-level gate across two chunkings is refused (exit 2), naming
both. The dataset fingerprint covers documents and evidence, not the chunking. Expected
verdicts and numbers are read straight from the results JSON files with the json module.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from documents_fixtures import reference as ref
from documents_fixtures.reference import DOCUMENTS

from rag_eval.cli import main

RESAMPLES = "2000"
METRICS = ["evidence_recall@3", "doc_ndcg@3", "ndcg@3"]
CHUNKINGS = {
    "words-6": {"method": "fixed", "size": 6, "overlap": 2},
    "words-10": {"method": "fixed", "size": 10, "overlap": 0},
    "windows": {"method": "fixed", "size": 6, "overlap": 2},  # the cuts of words-6 under another name
}
OWN_PLUGIN = '''
class Sentences:
    """Returns the sentence holding each query word (its own chunker), all with score 1."""

    def index(self, corpus):
        self.spans = []
        for doc, passage in corpus.items():
            text, start = passage["text"], 0
            while (stop := text.find(". ", start)) >= 0:
                self.spans.append((doc, start, stop + 1, text[start : stop + 1].lower()))
                start = stop + 2
            self.spans.append((doc, start, len(text), text[start:].lower()))

    def search(self, queries, top_k):
        return {
            q: [(d, s, e, 1.0) for d, s, e, t in self.spans if any(w in t for w in text.lower().split())][:top_k]
            for q, text in queries.items()
        }
'''


def chunks_of(name: str) -> list[tuple[str, int, int]]:
    spec = CHUNKINGS[name]
    return [(d, s, e) for d, t in DOCUMENTS.items() for s, e in ref.fixed_word_windows(t, spec["size"], spec["overlap"])]


def run_config(folder: Path, chunker: str | None, **extra) -> tuple[int, str, str]:
    """Run bm25 (label 'bm25') reading ``chunker`` (None: whole documents; 'own': the plug-in) into folder/out."""
    if chunker == "own":
        (folder / "own.py").write_text(OWN_PLUGIN, encoding="utf-8")
        retriever = {"label": "bm25", "adapter": "own:Sentences"}
        chunking = {}
    else:
        retriever = {"label": "bm25", "adapter": "bm25", **({"chunker": chunker} if chunker else {})}
        chunking = {chunker: CHUNKINGS[chunker]} if chunker else {}
    body = {"retrievers": [retriever], "top_k": 4, "metrics": METRICS if chunker != "own" else METRICS[:2], **extra}
    if chunking:
        body["chunking"] = chunking
    config = ref.write_config(folder, body)
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", str(config), "--output", str(folder / "out"), "--no-progress"])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """bm25.json of each chunking (and of whole documents, and of a plug-in's own spans), same dataset."""
    paths = {}
    for name in [*CHUNKINGS, "documents", "own"]:
        folder = tmp_path_factory.mktemp(name)
        ref.write_dataset(folder)
        code, _, err = run_config(folder, None if name == "documents" else name)
        assert (code, err) == (0, ""), err
        paths[name] = folder / "out" / "bm25.json"
    return paths


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def compare_cli(capsys, baseline: Path, candidate: Path, *gates: str) -> tuple[int, str, str]:
    args = ["compare", str(baseline), str(candidate), "--resamples", RESAMPLES]
    for gate in gates:
        args += ["--gate", gate]
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def drop(baseline: Path, candidate: Path, metric: str) -> tuple[float, float, float]:
    """(baseline mean, candidate mean, mean per-query drop) over the queries both score."""
    b, c = (load(p)["results"]["per_query"] for p in (baseline, candidate))
    paired = [q for q in b if b[q][metric] is not None and c[q][metric] is not None]
    assert paired and all((b[q][metric] is None) == (c[q][metric] is None) for q in b)
    base = sum(b[q][metric] for q in paired) / len(paired)
    cand = sum(c[q][metric] for q in paired) / len(paired)
    return base, cand, sum(b[q][metric] - c[q][metric] for q in paired) / len(paired)


def test_the_dataset_fingerprint_ignores_the_chunking_and_the_records_name_it(runs):
    documents = {name: load(path) for name, path in runs.items()}
    assert len({d["dataset"]["fingerprint"] for d in documents.values()}) == 1
    for name in CHUNKINGS:
        assert documents[name]["chunking"]["name"] == name
        assert documents[name]["chunking"]["fingerprint"] == ref.fingerprint(chunks_of(name))
    assert documents["windows"]["chunking"]["fingerprint"] == documents["words-6"]["chunking"]["fingerprint"]
    assert documents["words-10"]["chunking"]["fingerprint"] != documents["words-6"]["chunking"]["fingerprint"]


@pytest.mark.parametrize("metric", ["evidence_recall@3", "doc_ndcg@3"])
@pytest.mark.parametrize("baseline, candidate", [("words-6", "words-10"), ("words-10", "words-6"),
                                                 ("documents", "words-10"), ("own", "words-6")])
def test_document_and_evidence_gates_compare_chunkings(runs, capsys, metric, baseline, candidate):
    b, c = runs[baseline], runs[candidate]
    base, cand, dropped = drop(b, c, metric)
    code, out, err = compare_cli(capsys, b, c, metric)
    assert err == ""
    first, *_, verdict = out.splitlines()
    assert first.startswith(f"{'FAIL' if dropped > 0 else 'PASS'}\t{metric}\tbaseline {base:.4f}\tcandidate {cand:.4f}\t")
    if dropped > 0:
        assert code == 1 and first.endswith(f"dropped {dropped:.4f} > max_drop 0")
        assert verdict == "verdict: FAIL (1 of 1 gates failed)"
    else:
        assert code == 0 and verdict == "verdict: PASS (0 of 1 gates failed)"


def test_the_chunkings_differ_in_evidence_recall_so_both_verdicts_occur(runs):
    """Guards the test above: words-6 vs words-10 is a real difference, one way a pass, the other a fail."""
    _, _, dropped = drop(runs["words-6"], runs["words-10"], "evidence_recall@3")
    assert dropped != 0


@pytest.mark.parametrize(
    "baseline, candidate, gates",
    [("words-6", "words-10", ["ndcg@3"]), ("words-10", "words-6", ["evidence_recall@3", "ndcg@3"]),
     ("documents", "words-6", ["ndcg@3"])],
)
def test_a_chunk_level_gate_across_chunkings_is_refused_naming_both(runs, capsys, baseline, candidate, gates):
    b, c = runs[baseline], runs[candidate]
    code, out, err = compare_cli(capsys, b, c, *gates)
    assert (code, out) == (2, "")

    def title(name: str) -> str:
        record = load(runs[name])["chunking"]
        summary, shape = record["summary"], record["description"]
        counts = f"{summary['chunks']:,} chunks, mean {summary['mean_chars']:,.0f} chars"
        if record["kind"] == "documents":
            return f"whole documents ({counts}), fingerprint {record['fingerprint']}"
        return (f"{record['title']} (fixed, size {shape['size']}, overlap {shape['overlap']}, {counts}), "
                f"fingerprint {record['fingerprint']}")

    assert err == (
        f"rag-eval: error: incomparable results: chunk-level ndcg@3 compares different chunkings (baseline {b}: "
        f"{title(baseline)}; candidate {c}: {title(candidate)}), and each builds its ideal ranking from its own "
        "chunks; gate doc_ndcg@3 or evidence metrics (evidence_recall@k), which judge every chunking by the same "
        "documents and evidence\n"
    )
    if baseline == "documents":
        whole = [(doc, 0, len(text)) for doc, text in DOCUMENTS.items()]
        assert title(baseline).endswith(f"fingerprint {ref.fingerprint(whole)}")


@pytest.mark.parametrize("baseline, candidate", [("words-6", "words-6"), ("words-6", "windows")])
def test_a_chunk_level_gate_on_one_chunking_is_allowed(runs, capsys, baseline, candidate):
    """Same cuts (also under another chunker name, and so also by another run): like for like."""
    code, out, err = compare_cli(capsys, runs[baseline], runs[candidate], "ndcg@3")
    value = load(runs[baseline])["results"]["aggregate"]["ndcg@3"]
    assert load(runs[candidate])["results"]["aggregate"]["ndcg@3"] == value
    assert (code, err) == (0, "")
    assert out.splitlines()[0].startswith(
        f"PASS\tndcg@3\tbaseline {value:.4f}\tcandidate {value:.4f}\tdelta +0.0000 [+0.0000, +0.0000]"
    )


def test_own_spans_have_no_chunk_level_metric_to_gate(runs, capsys):
    code, out, err = compare_cli(capsys, runs["words-6"], runs["own"], "ndcg@3")
    assert (code, out) == (2, "")
    assert err == (
        f"rag-eval: error: incomparable results: {runs['own']} has no ndcg@3 (it has evidence_recall@3, doc_ndcg@3); "
        "gate only metrics both runs computed, with the same cutoffs\n"
    )


def test_a_changed_evidence_offset_changes_the_fingerprint_and_compare_refuses(runs, tmp_path, capsys):
    queries = json.loads(json.dumps(ref.QUERIES))
    item = queries[0]["evidence"][1]
    assert (item["start"], item["end"]) == ref.CAFE_SENTENCE
    item["end"] -= 1  # the sentence without its full stop
    ref.write_dataset(tmp_path, queries=queries)
    code, _, err = run_config(tmp_path, "words-6")
    assert (code, err) == (0, "")
    changed = tmp_path / "out" / "bm25.json"
    before, after = load(runs["words-6"])["dataset"]["fingerprint"], load(changed)["dataset"]["fingerprint"]
    assert before != after
    code, out, err = compare_cli(capsys, runs["words-6"], changed, "evidence_recall@3")
    assert (code, out) == (2, "")
    assert err == (
        f"rag-eval: error: incomparable results: different datasets (baseline {runs['words-6']}: tiny-documents "
        f"fingerprint {before}; candidate {changed}: tiny-documents fingerprint {after}); rerun the baseline on the "
        "same dataset\n"
    )


def test_regression_section_refuses_a_chunk_level_gate_across_chunkings_and_writes_nothing(runs, tmp_path):
    ref.write_dataset(tmp_path)
    regression = {"baseline": str(runs["words-6"]), "gates": {"ndcg@3": {"max_drop": 0.5}}, "resamples": 2000}
    code, out, err = run_config(tmp_path, "words-10", regression=regression)
    assert (code, out) == (2, "")
    assert re.fullmatch(
        r"rag-eval: error: incomparable results: chunk-level ndcg@3 compares different chunkings \(baseline "
        rf"{re.escape(str(runs['words-6']))}: words-6 \(fixed, size 6, overlap 2, [0-9]+ chunks, mean [0-9]+ chars\), "
        r"fingerprint [0-9a-f]{16}; candidate \(this run's 'bm25', not written\): words-10 \(fixed, size 10, overlap 0, "
        r"[0-9]+ chunks, "
        r"mean [0-9]+ chars\), fingerprint [0-9a-f]{16}\), .*\n", err
    ), err
    assert not (tmp_path / "out").exists()


def test_regression_section_gates_evidence_across_chunkings(runs, tmp_path):
    ref.write_dataset(tmp_path)
    regression = {"baseline": str(runs["words-6"]), "gates": {"evidence_recall@3": {"max_drop": 0.0}},
                  "resamples": 2000}
    code, out, err = run_config(tmp_path, "words-10", regression=regression)
    base, cand, dropped = drop(runs["words-6"], tmp_path / "out" / "bm25.json", "evidence_recall@3")
    assert err == ""
    assert code == (1 if dropped > 0 else 0)
    gate = next(line for line in out.splitlines() if line.startswith(("PASS\t", "FAIL\t")))
    assert gate.startswith(f"{'FAIL' if dropped > 0 else 'PASS'}\tevidence_recall@3\tbaseline {base:.4f}\t"
                           f"candidate {cand:.4f}\t")


def test_the_comparison_report_states_both_chunkings_and_does_not_match_their_chunks(runs, tmp_path, capsys):
    report = tmp_path / "comparison.md"
    code = main(["compare", str(runs["words-6"]), str(runs["words-10"]), "--resamples", RESAMPLES,
                 "--gate", "evidence_recall@3", "--report", str(report)])
    capsys.readouterr()
    assert code in (0, 1)
    text = report.read_text(encoding="utf-8")
    six, ten = (load(runs[name])["chunking"]["summary"] for name in ("words-6", "words-10"))
    assert (
        f"Chunking: baseline words-6 (fixed, size 6, overlap 2, {six['chunks']:,} chunks, mean "
        f"{six['mean_chars']:,.0f} chars); candidate words-10 (fixed, size 10, overlap 0, {ten['chunks']:,} chunks, "
        f"mean {ten['mean_chars']:,.0f} chars)."
    ) in text.splitlines()
    assert "Relevant passages lost" not in text
    if "worst regressions side by side" in text:
        assert "The two sides read different chunkings: their chunks are not matched one to one." in text
