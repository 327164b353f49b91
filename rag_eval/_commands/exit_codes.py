"""Exit codes of every ``rag-eval`` command, so that CI can tell them apart (docs/ci.md)."""

EXIT_PASSED = 0  # done; every regression gate passed
EXIT_REGRESSION = 1  # a regression gate failed (only that)
EXIT_BAD_INPUT = 2  # bad input: one line on stderr naming the file, the place and the fix
EXIT_INTERNAL_ERROR = 3  # a bug in rag-eval
EXIT_INTERRUPTED = 130  # Ctrl-C
