#!/usr/bin/env bash
# Set up rag_eval in ./.venv on a fresh machine: CPU torch first, then the package
# with its dense-retrieval, scale (FAISS, Ray, ONNX, OpenVINO) and test extras. Safe to run again.
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
"${PIP[@]}" install -e ".[dense,ann,ray,onnx,openvino,test]" "torch==2.13.0"
.venv/bin/python -c "import rag_eval, torch; print('rag_eval', rag_eval.__version__, '| torch', torch.__version__)"
