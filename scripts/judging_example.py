"""The judging loop, end to end, on ocean facts with deliberate holes: writes reports/judging-example/.

1. A query set with holes: ocean facts' judgements kept only where the incumbent (bm25) put the
   passage in its top 3, as a team that judged only what its own retriever showed would have them.
2. The incumbent (bm25) is the baseline; a dense candidate is gated against it (ndcg@10, max drop 0):
   its verdict says what it rests on, and which gates could flip on the unjudged passages.
3. `rag-eval pool` lists what the candidate surfaced that nobody judged; `rag-eval judge` grades the
   sheet (configs/judging/oracle_judge.py: the complete ocean-facts judgements, in a person's place);
   `rag-eval judgements merge` writes the grades into the query set, with their provenance.
4. Both run again on the merged set: the verdict after.

    .venv/bin/python scripts/judging_example.py        (about a minute; HF_HUB_OFFLINE=1 is set)

Every file of reports/judging-example/ is written by this script; its README.md gives the numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "reports" / "judging-example"
FULL = REPO / "datasets" / "ocean_facts.yaml"
DEPTH = int(os.environ.get("HOLES_DEPTH", "10"))


def rag_eval(*args: object, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", RAG_EVAL_CACHE_DIR=str(OUT / ".cache"))
    done = subprocess.run([str(REPO / ".venv" / "bin" / "rag-eval"), *map(str, args)], cwd=OUT, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        sys.exit(f"rag-eval {' '.join(map(str, args))} exited {done.returncode}:\n{done.stderr}")
    return done


def config(name: str, retriever: dict, dataset: str, regression: dict | None = None) -> Path:
    body = {"name": name, "dataset": {"path": dataset}, "retrievers": [retriever], "top_k": 10,
            "metrics": ["ndcg@10", "judged@10", "recall@10"], "main_metric": "ndcg@10", "output": name,
            "reuse_rankings": False}
    if regression:
        body["regression"] = regression
    path = OUT / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    full = yaml.safe_load(FULL.read_text(encoding="utf-8"))
    bm25 = {"label": "bm25", "adapter": "bm25", "params": {"k1": 1.2, "b": 0.75, "stemmer": "english",
                                                             "stopwords": "english"}}
    dense = {"label": "dense", "adapter": "dense", "params": {"model": "all-MiniLM-L6-v2"}}

    # 1. the holes: bm25's top DEPTH on the full set decides what stays judged
    config("full-bm25", bm25, str(FULL))
    rag_eval("run", "full-bm25.yaml", "--no-progress")
    ranking = json.loads((OUT / "full-bm25" / "bm25.json").read_text(encoding="utf-8"))["rankings"]
    for query in full["queries"]:
        seen = {row[0] for row in ranking.get(query["id"], [])[:DEPTH]}
        query["judgements"] = {p: g for p, g in (query.get("judgements") or {}).items() if p in seen}
    full["description"] = (f"ocean facts with its judgements kept only for bm25's top {DEPTH} of each query "
                           "(written by scripts/judging_example.py)")
    (OUT / "holes.yaml").write_text("# The query set with holes; rag-eval judgements merge adds the pooled grades.\n"
                                    + yaml.safe_dump(full, sort_keys=False, allow_unicode=True), encoding="utf-8")
    shutil.copy(OUT / "holes.yaml", OUT / "holes-before.yaml")

    # 2. baseline and candidate on the set with holes
    gate = {"baseline": "baseline/bm25.json", "gates": {"ndcg@10": {"max_drop": 0.0}}}
    config("baseline", bm25, "holes.yaml")
    config("candidate", dense, "holes.yaml", gate)
    rag_eval("run", "baseline.yaml", "--no-progress")
    before = rag_eval("run", "candidate.yaml", "--no-progress", ok=(0, 1))
    shutil.copytree(OUT / "candidate", OUT / "candidate-before")

    # 3. pool, judge, merge
    (OUT / "judge.yaml").write_text("adapter: oracle_judge:OracleJudge\n", encoding="utf-8")
    shutil.copy(REPO / "configs" / "judging" / "oracle_judge.py", OUT / "oracle_judge.py")
    pooled = rag_eval("pool", "candidate.yaml", "--depth", 10, "--output", "pool.csv", "--no-progress")
    judged = rag_eval("judge", "pool.csv", "--judge", "judge.yaml", "--output", "graded.csv", "--no-progress")
    merged = rag_eval("judgements", "merge", "graded.csv", "--into", "holes.yaml")

    # 4. after
    rag_eval("run", "baseline.yaml", "--no-progress")
    after = rag_eval("run", "candidate.yaml", "--no-progress", ok=(0, 1))
    shutil.rmtree(OUT / ".cache", ignore_errors=True)
    shutil.rmtree(OUT / "full-bm25")
    (OUT / "full-bm25.yaml").unlink()

    lines = ["# The judging loop on ocean facts with holes", "",
             "Written by `scripts/judging_example.py` (read it for each step). The query set `holes-before.yaml` keeps "
             f"ocean facts' judgements only for bm25's top {DEPTH}; `holes.yaml` is the same set after the merge.", "",
             "## Before: the candidate judged on the incumbent's holes", "", "```", before.stdout.strip(),
             before.stderr.strip(), "```", "", "Report: [candidate-before/report.md](candidate-before/report.md).", "",
             "## Pool, judge, merge", "", "```", pooled.stdout.strip(), judged.stdout.strip(), merged.stdout.strip(),
             "```", "", "The sheets: [pool.csv](pool.csv) (what nobody judged), [graded.csv](graded.csv) (the judge's grades).",
             "", "## After", "", "```", after.stdout.strip(), after.stderr.strip(), "```", "",
             "Report: [candidate/report.md](candidate/report.md).", ""]
    (OUT / "README.md").write_text("\n".join(line for line in lines if line is not None), encoding="utf-8")
    print((OUT / "README.md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
