"""How close each integration of a run came to rag_eval's exact dense retriever: the issue's exactness check.

Reads the results files of one `rag-eval run` output folder (e.g. configs/cranfield_integrations.yaml's)
and prints, per retriever, the mean of each metric against the reference's, the share of per-query
values equal to 4 decimals, and the share of queries whose top-k ranking (ids in order) is identical.

    python benchmarks/check_integrations_exact.py reports/cranfield_integrations [--reference dense]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--reference", default="dense")
    args = parser.parse_args()
    files = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(args.folder.glob("*.json"))
             if not p.name.startswith(".")}
    reference = files.pop(args.reference)
    ref_values = reference["results"]["per_query"]
    ref_rankings = reference["rankings"]
    metrics = list(reference["results"]["metrics"])
    print(f"| retriever | {' | '.join(f'mean {m} (Δ vs {args.reference})' for m in metrics)} | per-query equal (4 d.p.) | "
          "identical rankings |")
    print("|---|" + "---:|" * (len(metrics) + 2))
    for label, data in files.items():
        values, rankings = data["results"]["per_query"], data["rankings"]
        cells = []
        for metric in metrics:
            mean = data["results"]["aggregate"][metric]
            cells.append(f"{mean:.4f} ({mean - reference['results']['aggregate'][metric]:+.6f})")
        pairs = [(ref_values[q][m], values[q][m]) for q in ref_values for m in metrics if m in ref_values[q]]
        equal = sum(round(a, 4) == round(b, 4) for a, b in pairs)
        same = sum(_order(ref_rankings.get(q, {})) == _order(rankings.get(q, {})) for q in ref_rankings)
        print(f"| {label} | {' | '.join(cells)} | {equal}/{len(pairs)} ({equal / len(pairs):.1%}) | "
              f"{same}/{len(ref_rankings)} |")


def _order(ranking: list) -> list[str]:
    """The ranked ids of one query as a results file lists them (``[[id, score, grade], ...]``, best first)."""
    return [str(item[0]) for item in ranking]


if __name__ == "__main__":
    main()
