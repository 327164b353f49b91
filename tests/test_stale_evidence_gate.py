"""A run on evidence whose document changed under it: the report lists the stale span, and the gates fail
(exit 1, saying why) unless ``regression.on_stale_evidence: allow``. Through the CLI, on a hand-built set.

The evidence of q1 was given by offsets with the text they held ("bleach", [12, 18)); the document was edited
since (a word put in front), so [12, 18) now holds other text: the span is stale (moved to [18, 24)).
"""

from __future__ import annotations

import yaml

from rag_eval.cli import main

TEXT = "Coral reefs often bleach when the water warms."
assert TEXT[18:24] == "bleach"


def _write(folder, on_stale: str | None) -> tuple:
    (folder / "set.yaml").write_text(yaml.safe_dump({
        "documents": [{"id": "reef", "text": TEXT}, {"id": "kelp", "text": "Kelp grows in cold water."}],
        "queries": [
            {"id": "q1", "text": "why do reefs bleach",
             "evidence": [{"doc": "reef", "start": 12, "end": 18, "text": "bleach"}]},
            {"id": "q2", "text": "where does kelp grow", "evidence": [{"doc": "kelp", "quote": "Kelp grows in cold water."}]},
        ],
    }), encoding="utf-8")
    common = {"dataset": {"path": "set.yaml"}, "top_k": 2, "metrics": ["doc_ndcg@2"],
              "retrievers": [{"label": "s", "adapter": "static", "params": {"rankings": {"q1": ["reef"], "q2": ["kelp"]}}}]}
    (folder / "base.yaml").write_text(yaml.safe_dump({**common, "output": "base"}), encoding="utf-8")
    regression = {"baseline": "base/s.json", "gates": {"doc_ndcg@2": {"max_drop": 0.0}}}
    if on_stale is not None:
        regression["on_stale_evidence"] = on_stale
    (folder / "cand.yaml").write_text(yaml.safe_dump({**common, "output": "cand", "regression": regression}), encoding="utf-8")
    return folder / "base.yaml", folder / "cand.yaml"


def test_stale_evidence_is_listed_and_fails_the_gates(tmp_path, capsys):
    base, cand = _write(tmp_path, None)
    assert main(["run", str(base), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["run", str(cand), "--no-progress"]) == 1
    out = capsys.readouterr()
    assert "evidence span(s) of the dataset are stale" in out.out + out.err
    report = (tmp_path / "cand" / "report.md").read_text(encoding="utf-8")
    assert "- **Stale evidence (1 span):** the documents changed under these judgements" in report
    assert "  - q1: reef [12, 18) moved to [18, 24)" in report.splitlines()


def test_allow_gates_on_stale_evidence_anyway(tmp_path, capsys):
    base, cand = _write(tmp_path, "allow")
    assert main(["run", str(base), "--no-progress"]) == 0
    assert main(["run", str(cand), "--no-progress"]) == 0
