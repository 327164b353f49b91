"""report.html: the run's report as one self-contained page to explore (docs/report.md).

:func:`render_html_report` takes a run (with its plots and the text of its report.md) and returns the
page; rag_eval/_commands/outputs.py writes it under the plan's name (rag_eval._run.plan.REPORT_HTML).
The modules, each one job: ``data`` and ``documents_data`` build the embedded data, ``encode`` makes
text safe in HTML and JSON, ``markdown_html`` renders report.md's decision and holes, ``sections``
writes the static parts, ``assets_css``, ``script_table`` and ``script_detail`` are the inlined style
and script, ``page`` assembles them.
"""

from __future__ import annotations

from rag_eval._report.html.page import render_html_report

__all__ = ["render_html_report"]
