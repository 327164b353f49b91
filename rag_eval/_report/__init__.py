"""Markdown reports: run reports and comparison reports (pure renderers)."""
