#!/usr/bin/env bash
# Set up rag_eval in ./.venv on a fresh machine: CPU torch first, then the package (the
# distribution rag-eval-trec, editable) with its dense-retrieval, scale (FAISS, Ray, ONNX,
# OpenVINO), integrations (vector databases, LangChain, LlamaIndex, Haystack), test (with a local LLM server
# for the judge's tests, compiled once) and benchmark extras. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
# torch first, pinned to 2.13.0: sentence-transformers would otherwise pull the newest torch. Which
# build pip finds depends on the index: this project's machines' index carries the CPU wheel; PyPI's
# Linux wheels are CUDA builds (several GB). TORCH_INDEX_URL picks another index, e.g.
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu for the CPU build anywhere.
TORCH_FROM=()
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  TORCH_FROM=(--index-url "$TORCH_INDEX_URL")
fi
if ! .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null; then
  "${PIP[@]}" install "${TORCH_FROM[@]}" "torch==2.13.0"
fi
if ! .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.version.cuda is None else 1)"; then
  echo "setup.sh: note: torch $(.venv/bin/python -c 'import torch; print(torch.__version__)') is a CUDA build;" \
    "for the CPU build: rm -rf .venv && TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh" >&2
fi
# The distribution used to be called rag-eval (a name PyPI gives another project): an
# environment set up then still holds it, and two distributions would own one module.
if .venv/bin/python -m pip --disable-pip-version-check show -q rag-eval >/dev/null 2>&1; then
  "${PIP[@]}" uninstall -y rag-eval
fi
"${PIP[@]}" install -e ".[dense,ann,ray,onnx,openvino,integrations,test,judge-test,bench]" "torch==2.13.0"
# Bytecode for the package now: an editable install writes none, and where PYTHONDONTWRITEBYTECODE is set
# (this machine image sets it) Python never would, so every run compiled rag_eval again: a warm SciFact
# rerun took 2.05-2.22 s at best instead of 1.70 s. A source file changed later is compiled
# afresh in memory: a stale bytecode file is never used.
.venv/bin/python -m compileall -q rag_eval
.venv/bin/python -c "import rag_eval, torch; print('rag_eval', rag_eval.__version__, '| torch', torch.__version__)"
