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
# torch first, pinned to the CPU build: sentence-transformers would otherwise pull
# the newest torch with several GB of CUDA packages.
if ! .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null; then
  "${PIP[@]}" install "torch==2.13.0"
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
