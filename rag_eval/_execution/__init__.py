"""Execution engines: where encoding and exact search run (local process or a Ray cluster), never what they compute.

:mod:`.sharded` needs numpy only; the Ray engine (:mod:`.ray_engine`, :mod:`.ray_cluster`,
:mod:`.ray_sources`) imports Ray inside its functions, so importing this package (or rag_eval)
never imports Ray.
"""
