"""``python -m rag_eval``: the ``rag-eval`` command, for an environment without its console script."""

from rag_eval.cli import console_main

if __name__ == "__main__":  # pragma: no cover
    console_main()
