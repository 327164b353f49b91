"""report.html's script, first part: reading the embedded data and the per-query table (vanilla JavaScript).

The data block is parsed once; values become typed arrays; rankings stay compact strings decoded
per query on demand (rag_eval._report.html.data). The table is paged (100 rows by default), so 10,000
queries render as fast as 100: filtering and sorting work on an array of query numbers, and only the
rows of the current page are built. Every text is inserted with ``textContent`` or ``append`` of a
string (a text node), never as HTML. Keyboard: sort headers are buttons (``aria-sort`` on their
cells); one row of the page is in the tab order, the arrow keys, Home and End move between rows,
Page Up / Page Down between pages, Enter or Space opens the query (script_detail.py).
"""

from __future__ import annotations

__all__ = ["TABLE_JS"]

TABLE_JS = r"""
'use strict';
(() => {
const D = JSON.parse(document.getElementById('report-data').textContent);
const NONE = -2147483648;
const Q = D.qids.length, R = D.labels.length, M = D.metrics.length;
const DOCS = D.kind === 'documents';
const ALPHA = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) DIGIT[ALPHA.charCodeAt(i)] = i;

function number(s, at, width) {
  let n = 0;
  for (let p = at * width, end = p + width; p < end; p++) n = n * 64 + DIGIT[s.charCodeAt(p)];
  return n;
}
const V = D.vals.map(cols => cols.map(col => {
  if (col === null) return null;
  const a = new Int32Array(Q);
  if (typeof col[1] === 'string') {
    for (let i = 0; i < Q; i++) { const n = number(col[1], i, col[0]); a[i] = n === 0 ? NONE : n - 1; }
  } else {
    for (let i = 0; i < Q; i++) a[i] = col[i] === null ? NONE : col[i];
  }
  return a;
}));
const EO = new Int32Array(Q + 1);
for (let q = 0; q < Q; q++) EO[q + 1] = EO[q] + D.en[q];
const RO = D.rn.map(s => {
  const offsets = new Int32Array(Q + 1);
  for (let q = 0; q < Q; q++) offsets[q + 1] = offsets[q] + DIGIT[s.charCodeAt(q)] * D.rw;
  return offsets;
});

function ranking(r, q) {
  const out = [], s = D.rk[r], w = D.rw;
  for (let p = RO[r][q], end = RO[r][q + 1]; p < end; p += w) {
    let n = 0;
    for (let j = 0; j < w; j++) n = n * 64 + DIGIT[s.charCodeAt(p + j)];
    out.push(n);
  }
  return out;
}
function grade(q, e) { const n = number(D.eg, EO[q] + e, D.gw); return n === 0 ? null : D.grades[n - 1]; }
function unitOf(index) { return number(D.eu, index, D.uw); }
function unitId(q, e) { return D.units[unitOf(EO[q] + e)]; }
function unitText(unit) { return unit < D.utext.length ? D.utext[unit] : 0; }

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}
function code(text) { return el('code', null, text); }
function fmt4(v) {
  if (v === NONE || v === null) return 'n/a';
  const a = Math.abs(v);
  return (v < 0 ? '-' : '') + Math.floor(a / 10000) + '.' + String(a % 10000).padStart(4, '0');
}
function signed4(d) { return (d < 0 ? '-' : '+') + fmt4(Math.abs(d)); }
function fixed4(x) { return Number.isFinite(x) ? x.toFixed(4) : 'n/a'; }
function count(n) { return n.toLocaleString('en-US'); }
function tagText(t) { const pair = D.tags[t]; return pair[0] === 'tag' ? pair[1] : pair[0] + ': ' + pair[1]; }
function arrow(d) { return d > 0 ? ' ▲' : d < 0 ? ' ▼' : ' ='; }
function deltaClass(d, m) { return d === 0 ? '' : (d > 0) === (D.higher[m] === 1) ? 'up' : 'down'; }
function value(r, m, q) { const col = V[r][m]; return col === null ? null : col[q]; }
function delta(r, m, q) {
  const v = value(r, m, q), b = D.base === null ? null : value(D.base, m, q);
  return v === null || b === null || v === NONE || b === NONE ? NONE : v - b;
}

let HOLES = null;
function hasHole(q) {
  if (HOLES === null) {
    HOLES = new Uint8Array(Q);
    for (let p = 0; p < Q; p++) {
      for (let r = 0; r < R && !HOLES[p]; r++) {
        for (const e of ranking(r, p)) if (grade(p, e) === null) { HOLES[p] = 1; break; }
      }
    }
  }
  return HOLES[q] === 1;
}
let HAY = null;
function haystack(q) {
  if (HAY === null) HAY = D.qids.map((id, i) => (id + '\n' + D.qtext[i]).toLowerCase());
  return HAY[q];
}

const state = { metric: D.main, view: D.base === null ? 'values' : 'both', sort: null, dir: 1, search: '',
  tag: -1, holes: false, page: 0, size: 100, row: 0 };
let order = [];
const table = document.getElementById('queries-table');
const status = document.getElementById('status');

function columns() {
  const cols = [{ key: 'id', title: 'Query', sort: true }, { key: 'text', title: 'Text', sort: true },
    { key: 'tags', title: 'Tags', sort: false }];
  if (state.view !== 'deltas' || D.base === null) {
    for (let r = 0; r < R; r++) {
      cols.push({ key: 'val:' + r, r, kind: 'val', sort: true,
        title: D.labels[r] + (r === D.base ? ' (baseline)' : '') });
    }
  }
  if (D.base !== null && state.view !== 'values') {
    for (let r = 0; r < R; r++) {
      if (r !== D.base) cols.push({ key: 'delta:' + r, r, kind: 'delta', sort: true, title: 'Δ ' + D.labels[r] });
    }
  }
  return cols;
}

function sortOrder() {
  const key = state.sort, dir = state.dir, m = state.metric;
  if (key === null) { order.sort((a, b) => a - b); return; }
  if (key === 'id' || key === 'text') {
    const s = key === 'id' ? D.qids : D.qtext;
    order.sort((a, b) => (s[a] < s[b] ? -dir : s[a] > s[b] ? dir : a - b));
    return;
  }
  const [kind, rText] = key.split(':');
  const r = Number(rText);
  const get = kind === 'val' ? (q => { const v = value(r, m, q); return v === null ? NONE : v; }) : (q => delta(r, m, q));
  const keys = new Float64Array(Q);
  for (const q of order) keys[q] = get(q);
  order.sort((a, b) => {
    const x = keys[a], y = keys[b];
    if (x === NONE) return y === NONE ? a - b : 1;
    if (y === NONE) return -1;
    return x !== y ? (x - y) * dir : a - b;
  });
}

function refilter() {
  const needle = state.search.trim().toLowerCase();
  const out = [];
  for (let q = 0; q < Q; q++) {
    if (needle && !haystack(q).includes(needle)) continue;
    if (state.tag >= 0 && !D.qtags[q].includes(state.tag)) continue;
    if (state.holes && !hasHole(q)) continue;
    out.push(q);
  }
  order = out;
  sortOrder();
  state.page = 0;
  state.row = 0;
  render();
}

function renderHead(cols) {
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.sort : null;
  const tr = el('tr');
  for (const col of cols) {
    const th = el('th', col.kind ? 'num' : null);
    th.scope = 'col';
    if (!col.sort) { th.textContent = col.title; tr.append(th); continue; }
    const active = state.sort === col.key;
    th.setAttribute('aria-sort', active ? (state.dir > 0 ? 'ascending' : 'descending') : 'none');
    const button = el('button', 'sort', col.title);
    button.type = 'button';
    button.dataset.sort = col.key;
    const mark = el('span', 'arrow', active ? (state.dir > 0 ? '↑' : '↓') : '↕');
    mark.setAttribute('aria-hidden', 'true');
    button.append(mark);
    th.append(button);
    tr.append(th);
  }
  const head = table.tHead || table.createTHead();
  head.replaceChildren(tr);
  if (focused) { const again = head.querySelector('button[data-sort="' + CSS.escape(focused) + '"]'); if (again) again.focus(); }
}

function cell(col, q) {
  const m = state.metric;
  if (col.key === 'id') {  // a long id is cut to 3 lines (CSS); the full id is its title, and the query's page
    const td = el('td', 'qid'), id = code(D.qids[q]);
    id.title = D.qids[q];
    td.append(id);
    return td;
  }
  if (col.key === 'text') { const td = el('td', 'qtext', D.qtext[q]); td.title = D.qtext[q]; return td; }
  if (col.key === 'tags') {
    const td = el('td');
    for (const t of D.qtags[q]) td.append(el('span', 'tag', tagText(t)));
    return td;
  }
  if (col.kind === 'val') { const v = value(col.r, m, q); return el('td', 'num', v === null ? '–' : fmt4(v)); }
  const d = delta(col.r, m, q);
  if (d === NONE) return el('td', 'num', 'n/a');
  return el('td', 'num ' + deltaClass(d, m), signed4(d) + arrow(d));
}

function renderBody(cols) {
  const body = table.tBodies[0] || table.createTBody();
  const start = state.page * state.size, end = Math.min(order.length, start + state.size);
  const rows = document.createDocumentFragment();
  for (let i = start; i < end; i++) {
    const q = order[i];
    const tr = el('tr');
    tr.dataset.q = String(q);
    tr.dataset.qid = D.qids[q];
    tr.tabIndex = i - start === state.row ? 0 : -1;
    for (const col of cols) tr.append(cell(col, q));
    rows.append(tr);
  }
  if (end === start) {
    const tr = el('tr'), td = el('td', 'muted', 'No query matches the filters.');
    td.colSpan = cols.length;
    tr.append(td);
    rows.append(tr);
  }
  body.replaceChildren(rows);
}

function renderFoot(cols) {
  // Nothing filtered: the run's exact means (D.means, D.dmeans), the decision's numbers; else the mean of the
  // 4-decimal values shown. A query with no value (n/a) is left out: each mean says over how many when fewer.
  const foot = table.tFoot || table.createTFoot();
  const tr = el('tr');
  const all = order.length === Q;
  const first = el('td', null, all
    ? 'Mean over the ' + count(Q) + ' quer' + (Q === 1 ? 'y' : 'ies') + (D.micro
      ? ' (of the exact values; report.md\'s dataset values are micro: another number)'
      : ' (of the exact values, as in report.md)')
    : 'Mean of the values shown over the ' + count(order.length) + ' quer' + (order.length === 1 ? 'y' : 'ies') +
      ' filtered');
  first.colSpan = 3;
  tr.append(first);
  const m = state.metric;
  for (const col of cols.slice(3)) {
    let sum = 0, n = 0;
    for (const q of order) {
      const v = col.kind === 'val' ? value(col.r, m, q) : delta(col.r, m, q);
      if (v !== null && v !== NONE) { sum += v; n++; }
    }
    const mean = n ? sum / n / 10000 : NaN;
    let text = !n ? 'n/a' : col.kind === 'delta' ? (mean < 0 ? '' : '+') + fixed4(mean) : fixed4(mean);
    if (all && n) {
      const exact = (col.kind === 'delta' ? D.dmeans : D.means)[col.r][m];
      if (exact !== null) text = exact;
    }
    const td = el('td', 'num', text);
    if (n && n < order.length) td.append(el('span', 'n', 'over ' + count(n) + ' of ' + count(order.length)));
    tr.append(td);
  }
  foot.replaceChildren(tr);
}

function pages() { return Math.max(1, Math.ceil(order.length / state.size)); }
function renderPager() {
  const last = pages() - 1;
  document.getElementById('page-first').disabled = state.page === 0;
  document.getElementById('page-prev').disabled = state.page === 0;
  document.getElementById('page-next').disabled = state.page >= last;
  document.getElementById('page-last').disabled = state.page >= last;
  document.getElementById('page-of').textContent = 'Page ' + count(state.page + 1) + ' of ' + count(last + 1);
}
function renderStatus() {
  const start = state.page * state.size;
  const end = Math.min(order.length, start + state.size);
  const filtered = order.length === Q ? '' : ' (filtered from ' + count(Q) + ')';
  status.textContent = order.length
    ? 'Queries ' + count(start + 1) + '–' + count(end) + ' of ' + count(order.length) + filtered + '.'
    : 'No query matches the filters' + filtered + '.';
}

function render() {
  const cols = columns();
  renderHead(cols);
  renderBody(cols);
  renderFoot(cols);
  renderPager();
  renderStatus();
}

function goPage(page, row) {
  state.page = Math.max(0, Math.min(pages() - 1, page));
  state.row = row === 'last' ? Math.min(state.size, order.length - state.page * state.size) - 1 : (row || 0);
  render();
}
function rowsOfPage() { return Array.from(table.tBodies[0].rows).filter(tr => tr.dataset.q !== undefined); }
function focusRow(i) {
  const rows = rowsOfPage();
  if (!rows.length) return;
  i = Math.max(0, Math.min(rows.length - 1, i));
  rows.forEach((tr, j) => { tr.tabIndex = j === i ? 0 : -1; });
  state.row = i;
  rows[i].focus();
}

table.tHead || table.createTHead();
table.addEventListener('click', event => {
  const button = event.target.closest('button.sort');
  if (button) {
    const key = button.dataset.sort;
    if (state.sort === key) state.dir = -state.dir; else { state.sort = key; state.dir = 1; }
    sortOrder();
    goPage(0, 0);
    return;
  }
  const tr = event.target.closest('tbody tr');
  if (tr && tr.dataset.q !== undefined) {
    focusRow(rowsOfPage().indexOf(tr));
    openDetail(Number(tr.dataset.q));
  }
});
table.addEventListener('keydown', event => {
  const tr = event.target.closest('tbody tr');
  if (!tr || tr.dataset.q === undefined || event.target !== tr) return;
  const i = rowsOfPage().indexOf(tr);
  const keys = {
    ArrowDown: () => (i + 1 < rowsOfPage().length ? focusRow(i + 1)
      : state.page + 1 < pages() ? (goPage(state.page + 1, 0), focusRow(0)) : null),
    ArrowUp: () => (i > 0 ? focusRow(i - 1) : state.page > 0 ? (goPage(state.page - 1, 'last'), focusRow(state.row)) : null),
    Home: () => focusRow(0),
    End: () => focusRow(rowsOfPage().length - 1),
    PageDown: () => { goPage(state.page + 1, 0); focusRow(0); },
    PageUp: () => { goPage(state.page - 1, 0); focusRow(0); },
    Enter: () => openDetail(Number(tr.dataset.q)),
    ' ': () => openDetail(Number(tr.dataset.q)),
  };
  if (keys[event.key]) { event.preventDefault(); keys[event.key](); }
});

function bind(id, type, handler) { const node = document.getElementById(id); if (node) node.addEventListener(type, handler); }
bind('metric', 'change', event => { state.metric = Number(event.target.value); sortOrder(); render(); });
bind('view', 'change', event => { state.view = event.target.value; render(); });
let typing = 0;
bind('search', 'input', event => {
  clearTimeout(typing);
  const text = event.target.value;
  typing = setTimeout(() => { state.search = text; refilter(); }, 150);
});
bind('search', 'keydown', event => {
  if (event.key === 'Enter') { clearTimeout(typing); state.search = event.target.value; refilter(); }
});
bind('tag', 'change', event => { state.tag = Number(event.target.value); refilter(); });
bind('holes-only', 'change', event => { state.holes = event.target.checked; refilter(); });
bind('page-size', 'change', event => { state.size = Number(event.target.value); goPage(0, 0); });
bind('page-first', 'click', () => goPage(0, 0));
bind('page-prev', 'click', () => goPage(state.page - 1, 0));
bind('page-next', 'click', () => goPage(state.page + 1, 0));
bind('page-last', 'click', () => goPage(pages() - 1, 0));
"""
