"""Judges: grade (query, passage) pairs 0-3 for a judgement sheet (``rag-eval judge``).

- :mod:`~rag_eval._models.judges.base`: the seam (``judge(query, passages) -> list[JudgeGrade]``), the
  grade, and the registry that names, checks and builds judges (built-ins, plug-ins, import strings);
- :mod:`~rag_eval._models.judges.llm`: any OpenAI-compatible chat endpoint, with
  :mod:`~rag_eval._models.judges.prompt` (the graded 0-3 prompt and its strict parser),
  :mod:`~rag_eval._models.judges.cache` (every answer kept), over :mod:`rag_eval._core.http_requests`;
- :mod:`~rag_eval._models.judges.cross_encoder`: a local cross-encoder's score cut by thresholds.
"""
