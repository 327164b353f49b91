"""`rag-eval compare` between variants of one run: output folders with --variant / --baseline-variant."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO

from rag_eval.cli import main

SWEEP = REPO / "reports" / "ocean-facts-sweep"
BASE, CAND = "bm25.k1-1.5.b-0.75", "bm25.k1-0.9.b-0.4"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["compare", *args, "--resamples", "2000"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_two_variants_of_one_folder_compare_as_their_results_files(capsys):
    by_folder = run(capsys, str(SWEEP), str(SWEEP), "--baseline-variant", BASE, "--variant", CAND)
    by_file = run(capsys, str(SWEEP / f"{BASE}.json"), str(SWEEP / f"{CAND}.json"))
    assert by_folder == by_file
    code, out, _ = by_folder
    base, cand = (json.loads((SWEEP / f"{label}.json").read_text())["results"]["aggregate"]["ndcg@10"]
                  for label in (BASE, CAND))
    assert code == 0 and out.startswith(f"PASS\tndcg@10\tbaseline {base:.4f}\tcandidate {cand:.4f}\t")


def test_a_folder_without_a_choice_lists_its_variants(capsys):
    code, out, err = run(capsys, str(SWEEP), str(SWEEP / f"{CAND}.json"))
    assert (code, out) == (2, "")
    assert err == (
        f"rag-eval: error: baseline {SWEEP}: a run's output folder holds several results; choose one with "
        "--baseline-variant (it has bm25.k1-0.9.b-0.4, bm25.k1-0.9.b-0.75, bm25.k1-1.2.b-0.4, bm25.k1-1.2.b-0.75, "
        "bm25.k1-1.5.b-0.4, bm25.k1-1.5.b-0.75, seed-ranking)\n"
    )


def test_an_unknown_variant_gets_a_guess_and_a_file_refuses_the_flag(capsys, tmp_path: Path):
    code, _, err = run(capsys, str(SWEEP / f"{BASE}.json"), str(SWEEP), "--variant", "bm25.k1-0.9.b-0.5")
    assert code == 2 and err.startswith(
        f"rag-eval: error: --variant bm25.k1-0.9.b-0.5: no such variant in {SWEEP}; did you mean 'bm25.k1-0.9.b-0.75'? "
        "it has bm25.k1-0.9.b-0.4, "
    )
    code, _, err = run(capsys, str(SWEEP / f"{BASE}.json"), str(SWEEP / f"{CAND}.json"), "--variant", CAND)
    assert code == 2 and "is a results file, not a run's output folder" in err
    code, _, err = run(capsys, str(tmp_path), str(SWEEP / f"{CAND}.json"), "--baseline-variant", BASE)
    assert code == 2 and err == (
        f"rag-eval: error: baseline {tmp_path}: is a folder, expected a results file (or the output folder of "
        "`rag-eval run`, whose .rag_eval.json lists its <label>.json files, with --baseline-variant)\n"
    )


def test_a_folder_of_one_retrievers_results_needs_no_choice(capsys):
    """Before: "holds several results; choose one with --variant (it has bm25)", for a folder holding one."""
    single = REPO / "reports" / "judging-example" / "baseline"
    labels = json.loads((single / ".rag_eval.json").read_text())["files"]
    (only,) = [name for name in labels if name.endswith(".json")]
    by_folder = run(capsys, str(single), str(single))
    assert by_folder == run(capsys, str(single / only), str(single / only))
    assert by_folder[0] == 0 and "verdict: PASS" in by_folder[1]
