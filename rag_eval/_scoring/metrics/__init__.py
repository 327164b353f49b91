"""Metric names and vectorised metric kernels (pure: no I/O)."""

from rag_eval._scoring.metrics.measures import Metric, parse_metric, parse_metrics, valid_metric_names

__all__ = ["Metric", "parse_metric", "parse_metrics", "valid_metric_names"]
