"""Retrievers that live outside rag_eval: vector databases, frameworks and HTTP services.

What they share lives here: a hit as a database or framework returns it (:mod:`.hits`), how a hit
becomes a passage or a span of a judged document (:mod:`.mapping`), the query latency each
backend is measured by (:mod:`.latency`), the vector-database base with its managed and read-only
modes (:mod:`.vector_db`), and the base of retrievers asked by query text (:mod:`.by_text`).
Each integration imports its client library inside the function that needs it.
"""
