"""``cross_encoder``: grade passages with a local cross-encoder's score, cut into 0-3 by three thresholds.

JUDGE.yaml::

    adapter: cross_encoder
    params:
      model: ./models/my-reranker     # a local folder or a cached Hugging Face name (as adapter: cross_encoder)
      thresholds: [-2.0, 1.0, 4.0]    # required: the scores at which grades 1, 2 and 3 begin
      batch_size: 32
      max_length: null                # token cap for a (query, passage) pair (default: the model's)
      device: auto                    # auto | cpu | cuda | cuda:N | mps
      show_progress: true

The score is the model's raw logit (no sigmoid), exactly as the ``cross_encoder`` retriever
scores (the model is loaded by the same code, :func:`rag_eval._models.embeddings.loading.load_scorer`).
With ``thresholds: [t1, t2, t3]`` (strictly increasing) a passage scoring ``s`` gets

- 0 when ``s < t1``; 1 when ``t1 <= s < t2``; 2 when ``t2 <= s < t3``; 3 when ``s >= t3``

(a score equal to a threshold gets the higher grade). A cross-encoder's scale depends on the
model, so there is no default: pick the thresholds on a few passages people have graded (the
calibration report shows how well they agree). The sheet's source is ``cross_encoder:<model>``,
and the explanation the score itself.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from rag_eval._models import files as _models
from rag_eval._models.embeddings.interface import Scorer
from rag_eval._models.embeddings.loading import load_scorer
from rag_eval._models.embeddings.options import EncoderOptions
from rag_eval._models.judges.base import JudgeGrade, JudgeParams, check_params
from rag_eval._models.progress import library_bars, progress_wanted

ADAPTER = "cross_encoder judge"


class CrossEncoderJudgeParams(JudgeParams):
    """Parameters of the ``cross_encoder`` judge (see the module docstring)."""

    model: str = Field(..., min_length=1, description="a cross-encoder: a local folder or a cached model name")
    thresholds: list[float] = Field(..., description="three increasing scores: where grades 1, 2 and 3 begin")
    batch_size: int = Field(32, ge=1, description="(query, passage) pairs per model batch")
    max_length: int | None = Field(None, ge=1, description="token cap for a (query, passage) pair")
    device: str = Field("auto", description="auto | cpu | cuda | cuda:N | mps")
    show_progress: bool = Field(True, description="progress bars while loading and scoring")

    @field_validator("thresholds")
    @classmethod
    def _increasing(cls, value: list[float]) -> list[float]:
        if len(value) != 3:
            raise ValueError(f"must be three increasing scores (where grades 1, 2 and 3 begin), got {len(value)}")
        if not all(math.isfinite(t) for t in value):
            raise ValueError("must be finite numbers")
        if any(b <= a for a, b in itertools.pairwise(value)):
            raise ValueError(f"must increase strictly (the scores where grades 1, 2 and 3 begin), got {value}")
        return value

    @field_validator("model")
    @classmethod
    def _model_exists(cls, value: str) -> str:
        _models.resolve_model(value, ADAPTER)  # cheap (no torch): a missing folder is found before loading
        return value


def grade_for(score: float, thresholds: Sequence[float]) -> int:
    """The grade of ``score``: how many thresholds it reaches (``>=``), so 0 to 3."""
    return bisect.bisect_right(list(thresholds), score)


class CrossEncoderJudge:
    """Grades (query, passage) pairs by a local cross-encoder's score (see the module docstring)."""

    Params = CrossEncoderJudgeParams

    def __init__(self, **params: Any) -> None:
        settings: CrossEncoderJudgeParams = check_params(CrossEncoderJudgeParams, params, "cross_encoder")
        self.settings = settings
        self.thresholds = tuple(settings.thresholds)
        self.resolved = _models.resolve_model(settings.model, ADAPTER)
        name = Path(settings.model).name if _models.looks_like_path(settings.model) else settings.model
        self.source = f"cross_encoder:{name}"
        shown = ", ".join(f"{t:g}" for t in self.thresholds)
        self.description = f"rag_eval cross_encoder judge, model {settings.model}, thresholds {shown}"
        self._model: Scorer | None = None
        self.pairs_scored = 0

    def judge(self, query: str, passages: list[str]) -> list[JudgeGrade]:
        """One grade per passage of ``query``."""
        return self.judge_batches([(query, passages)])[0]

    def judge_batches(self, batches: Sequence[tuple[str, Sequence[str]]]) -> list[list[JudgeGrade]]:
        """Every batch's grades, all pairs scored in one pass of the model."""
        pairs = [(query, passage) for query, passages in batches for passage in passages]
        scores = self._score(pairs) if pairs else []
        grades = iter(self._grade(score) for score in scores)
        return [[next(grades) for _ in passages] for _, passages in batches]

    def _grade(self, score: float) -> JudgeGrade:
        if not math.isfinite(score):
            return JudgeGrade(None, f"score {score}", error=f"the model scored {score}, not a number")
        return JudgeGrade(float(grade_for(score, self.thresholds)), f"score {score:.6g}")

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        show = progress_wanted(self.settings.show_progress)
        if self._model is None:
            with library_bars(show):
                self._model = load_scorer(self.resolved, self.settings.device, EncoderOptions.model_validate({}), None,
                                          self.settings.max_length, ADAPTER)
        scores = self._model.score(pairs, batch_size=self.settings.batch_size, show_progress=show)
        self.pairs_scored += len(pairs)
        return [float(s) for s in scores.tolist()]
