#!/usr/bin/env bash
# Build the sdist and the wheel as a release would, install the wheel (not editable) into a
# fresh virtual environment outside the repository, and run the ocean-facts example with it
# from another folder. Whatever the package reads at run time must be in the wheel: a module
# or data file that lives only in this checkout fails here, not on a user's machine.
#
#   bash scripts/check_wheel.sh        (needs .venv from scripts/setup.sh, for `build`)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PYTHON="${PYTHON:-python3}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# No flags: the sdist first, then the wheel built from the unpacked sdist, so a file missing
# from the sdist fails the wheel's build. The build runs in an isolated environment with the
# build-system requirements of pyproject.toml only.
.venv/bin/python -m build --outdir "$WORK/dist" . > "$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
WHEEL=$(ls "$WORK"/dist/*.whl)
SDIST=$(ls "$WORK"/dist/*.tar.gz)
echo "built $(basename "$SDIST") and $(basename "$WHEEL")"
grep -iE "deprecat|SetuptoolsWarning" "$WORK/build.log" || true  # a deprecation in the package metadata shows up here first

# Every file under rag_eval/ (modules and any data they read) is in the wheel.
.venv/bin/python - "$WHEEL" <<'EOF'
import sys
import zipfile
from pathlib import Path

in_wheel = {name for name in zipfile.ZipFile(sys.argv[1]).namelist() if name.startswith("rag_eval/")}
in_tree = {
    path.as_posix()
    for path in Path("rag_eval").rglob("*")
    if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".pyc", ".pyo"}
}
missing = sorted(in_tree - in_wheel)
if missing:
    sys.exit(f"in rag_eval/ but not in the wheel: {', '.join(missing)}")
print(f"the wheel holds all {len(in_tree)} files of rag_eval/")
EOF

"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip --disable-pip-version-check -q install "$WHEEL"

# From another folder, with a cache of its own: nothing of the checkout on sys.path, no stored ranking reused.
cd "$WORK"
export RAG_EVAL_CACHE_DIR="$WORK/cache"
"$WORK/venv/bin/python" - <<'EOF'
import importlib.metadata
import rag_eval

where = rag_eval.__file__
assert "site-packages" in where, f"rag_eval imported from {where}, not from the installed wheel"
direct = importlib.metadata.distribution("rag-eval-trec").read_text("direct_url.json") or ""
assert '"editable": true' not in direct, "an editable install"
print(f"rag_eval {rag_eval.__version__} from {where}")
EOF
"$WORK/venv/bin/rag-eval" validate "$REPO/configs/ocean_facts.yaml"
"$WORK/venv/bin/rag-eval" run "$REPO/configs/ocean_facts.yaml" --output "$WORK/ocean-facts" --no-progress

# The same numbers and rankings as the report committed in the repository.
"$WORK/venv/bin/python" - "$REPO/reports/ocean-facts" "$WORK/ocean-facts" <<'EOF'
import json
import sys
from pathlib import Path

committed, fresh = Path(sys.argv[1]), Path(sys.argv[2])
for label in ("seed-ranking", "bm25"):
    want = json.loads((committed / f"{label}.json").read_text(encoding="utf-8"))["results"]
    got = json.loads((fresh / f"{label}.json").read_text(encoding="utf-8"))["results"]
    assert got == want, f"{label}.json: the installed wheel's results differ from reports/ocean-facts"
    assert (fresh / f"{label}.run").read_bytes() == (committed / f"{label}.run").read_bytes(), f"{label}.run differs"
written = sorted(p.name for p in fresh.iterdir())
print("wrote", ", ".join(written))
missing = {"report.md", ".rag_eval.json", "per-query.csv", "bm25.json", "bm25.run"} - set(written)
assert not missing, f"not written: {missing}"
print("the same results and run files as reports/ocean-facts")
EOF
