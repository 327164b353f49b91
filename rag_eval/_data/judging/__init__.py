"""Judgements as people and judges work on them: the judgement sheet, and what reads and writes it."""
