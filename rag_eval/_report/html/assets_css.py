"""report.html's style sheet, inlined in the page (no file to fetch, no framework).

Grades, holes and evidence read without colour too: the symbols and words the script writes carry
them (✓ 3, ✗ 0, ? unjudged; evidence bold and underlined); colour only adds to them. Focus is
always visible. The sheet is allowed by its hash in the page's Content-Security-Policy.
"""

from __future__ import annotations

__all__ = ["CSS"]

CSS = r"""
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --soft: #f6f8fa; --accent: #0550ae;
  --rel: #dafbe1; --rel-fg: #116329; --zero: #f6f8fa; --hole: #fff8c5; --hole-fg: #7d4e00;
  --up: #116329; --down: #a40e26; --mark: #ffe58f; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff; font: 15px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, "Noto Sans", "DejaVu Sans", sans-serif; }
header.page, main { max-width: 1400px; margin: 0 auto; padding: 0 20px; }
header.page { padding-top: 16px; }
h1 { font-size: 1.6em; margin: .3em 0; }
h2 { font-size: 1.3em; margin: 1.4em 0 .5em; padding-bottom: .2em; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.1em; margin: 1em 0 .4em; }
h4 { font-size: 1em; margin: .9em 0 .3em; }
code { font: .92em/1.3 ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, monospace;
  background: var(--soft); padding: 0 .25em; border-radius: 4px; overflow-wrap: anywhere; unicode-bidi: isolate; }
a { color: var(--accent); }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 8px; top: 8px; background: #fff; padding: 6px; z-index: 10; }
.facts { margin: .3em 0; padding-left: 1.2em; }
.facts li { margin: .1em 0; }
nav.toc a { margin-right: 1em; }
.note, .muted { color: var(--muted); }
.badge { font-size: .8em; border: 1px solid var(--line); border-radius: 10px; padding: 0 .5em; }
.scroll { overflow-x: auto; max-width: 100%; }
table.static { border-collapse: collapse; margin: .4em 0; font-variant-numeric: tabular-nums; }
table.static th, table.static td { border: 1px solid var(--line); padding: 3px 8px; text-align: left;
  vertical-align: top; }
table.static th { background: var(--soft); }
table.static tbody th { white-space: nowrap; text-align: left; }
table.static .num { text-align: right; }
.num { text-align: right; white-space: nowrap; }
caption { text-align: left; color: var(--muted); padding: 2px 0; }
details.segments { margin: .4em 0; }
summary { cursor: pointer; }
figure.plot { margin: 1em 0; border: 1px solid var(--line); border-radius: 6px; padding: 8px; }
figure.plot img { max-width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); margin-top: 4px; }
.controls { display: flex; flex-wrap: wrap; gap: 10px 18px; align-items: end; margin: .5em 0; }
.controls label { display: flex; flex-direction: column; font-size: .85em; color: var(--muted); gap: 2px; }
.controls label.check { flex-direction: row; align-items: center; gap: 6px; }
input, select, button { font: inherit; color: inherit; }
input[type=search] { min-width: 16em; padding: 3px 6px; border: 1px solid var(--line); border-radius: 6px; }
select { padding: 3px 6px; border: 1px solid var(--line); border-radius: 6px; background: #fff; max-width: 22em; }
button { cursor: pointer; border: 1px solid var(--line); background: var(--soft); border-radius: 6px;
  padding: 3px 10px; }
button:disabled { cursor: default; opacity: .5; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 1px; }
tr:focus-visible { outline-offset: -3px; }
.hint { font-size: .85em; color: var(--muted); margin: .2em 0 .5em; }
.table-box { overflow: auto; max-height: 72vh; border: 1px solid var(--line); border-radius: 6px; }
table.grid { border-collapse: separate; border-spacing: 0; width: max-content; min-width: 100%;
  font-variant-numeric: tabular-nums; }
table.grid th, table.grid td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
table.grid thead th { position: sticky; top: 0; background: var(--soft); z-index: 1; font-weight: 600; }
table.grid tfoot td { position: sticky; bottom: 0; background: var(--soft); font-weight: 600; }
table.grid th.num, table.grid td.num { text-align: right; }
table.grid tbody tr { cursor: pointer; }
table.grid tbody tr:nth-child(even) { background: #fbfcfd; }
table.grid tbody tr:hover { background: #eef4fb; }
td.qtext { max-width: 28em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
td.qid code { background: none; padding: 0; display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 3;
  line-clamp: 3; overflow: hidden; max-width: 24em; overflow-wrap: anywhere; }
button.sort { border: 0; background: none; padding: 0; font-weight: 600; text-align: inherit; }
button.sort .arrow { color: var(--muted); margin-left: .3em; }
.tag { display: inline-block; border: 1px solid var(--line); border-radius: 10px; padding: 0 .45em;
  margin: 0 .2em .1em 0; font-size: .82em; white-space: nowrap; unicode-bidi: isolate; }
.up { color: var(--up); }
.down { color: var(--down); }
.pager { display: flex; gap: 8px; align-items: center; margin: .5em 0; flex-wrap: wrap; }
dialog#detail { width: min(1500px, 96vw); max-height: 94vh; border: 1px solid var(--line); border-radius: 8px;
  padding: 0; }
dialog#detail::backdrop { background: rgba(20, 24, 28, .45); }
.detail-head { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line);
  padding: 10px 18px; z-index: 2; display: flex; gap: 12px; align-items: start; justify-content: space-between; }
.detail-head h2 { margin: 0; border: 0; padding: 0; font-size: 1.2em; min-width: 0; flex: 1 1 auto; }
.detail-head > div { flex: none; }
#detail-qid { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; line-clamp: 2;
  overflow: hidden; overflow-wrap: anywhere; }
.qid-full code { overflow-wrap: anywhere; }
.detail-body { padding: 4px 18px 18px; }
.qtext-full { font-size: 1.05em; margin: .3em 0; }
.picks { display: flex; flex-wrap: wrap; gap: 18px; align-items: end; margin: .8em 0; }
.picks label { display: flex; flex-direction: column; font-size: .85em; color: var(--muted); }
.panels { display: grid; grid-template-columns: 1fr; gap: 18px; }
.panels.two { grid-template-columns: 1fr 1fr; }
@media (max-width: 900px) { .panels.two { grid-template-columns: 1fr; } }
.panel { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px 12px; min-width: 0; }
.panel h3 { margin-top: .3em; }
table.units { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
table.units th, table.units td { border-bottom: 1px solid var(--line); padding: 4px 6px; text-align: left;
  vertical-align: top; }
table.units td.unit { overflow-wrap: anywhere; width: 100%; }
table.units td.num, table.units th.num { white-space: nowrap; text-align: right; }
table.units th.other { white-space: normal; width: 8em; min-width: 8em; font-size: .85em; overflow-wrap: break-word; }
tr.hole td { background: var(--hole); }
tr.unread td { opacity: .55; }
table.grid tfoot span.n { display: block; font-weight: 400; font-size: .8em; color: var(--muted); }
.g { white-space: nowrap; font-weight: 600; border-radius: 4px; padding: 0 .35em; }
.g-rel { background: var(--rel); color: var(--rel-fg); }
.g-zero { background: var(--zero); color: var(--muted); }
.g-hole { background: var(--hole); color: var(--hole-fg); border: 1px dashed var(--hole-fg); }
.unit-text { display: block; color: #24292f; margin-top: 2px; unicode-bidi: plaintext; }
mark { background: var(--mark); color: inherit; font-weight: 700; text-decoration: underline; }
.legend { font-size: .85em; color: var(--muted); }
table.derive { border-collapse: collapse; margin: .3em 0; font-variant-numeric: tabular-nums; }
table.derive th, table.derive td { border: 1px solid var(--line); padding: 2px 8px; text-align: right; }
.formula { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .9em; overflow-wrap: anywhere; }
.result { font-weight: 700; }
@media print { .controls, .pager, .hint, nav.toc { display: none; } .table-box { max-height: none; } }
"""
