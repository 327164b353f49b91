"""Execution engines: where encoding and exact search run (local process or a Ray cluster), never what they compute.

:mod:`.scores` and :mod:`.sharded` need numpy only; :mod:`.ray_engine` imports Ray inside its
functions, so importing this package (or rag_eval) never imports Ray.
"""
