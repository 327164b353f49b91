"""report.html's script, second part: one query's drill-down, side by side, and the page's start.

A modal ``<dialog>`` (Esc closes it and focus returns to the query's row): the query's values for
every retriever, then one retriever's ranking, or two side by side, each unit with its grade in words
and symbols (✓ 3, ✗ 0, ? unjudged) and its text, the evidence inside a chunk marked, then how the
main metric was worked out: nDCG term by term for passages (the gain and discount of report.md's
derivation, rag_eval._report.derivation), the evidence characters for documents. The arithmetic of the
derivation is done here, on the grades the page holds; the run's own value is shown beside it.
Offsets of chunk texts are code points (Python's), so the texts are cut with ``Array.from``.
"""

from __future__ import annotations

__all__ = ["DETAIL_JS"]

DETAIL_JS = r"""
const dialog = document.getElementById('detail');
const detailBody = document.getElementById('detail-body');
const picks = { a: D.base !== null ? D.base : 0, b: -1 };
const LONG_ID = 80;  // characters: a longer query id is also written out in full in the query's body
let current = -1;

function fmtGrade(g) { return String(g); }
function gradeBadge(g) {
  if (g === null) return el('span', 'g g-hole', '? unjudged');
  return el('span', g > 0 ? 'g g-rel' : 'g g-zero', (g > 0 ? '✓ ' : '✗ ') + fmtGrade(g));
}
function at(k) { return k === null ? '' : '@' + k; }

function marked(text, m) {
  const span = el('span', 'unit-text');
  if (!m) { span.textContent = text; return span; }
  const cps = Array.from(text);
  if (m[0]) span.append('…');
  let pos = 0;
  for (let i = 2; i < m.length; i += 2) {
    if (m[i] > pos) span.append(cps.slice(pos, m[i]).join(''));
    span.append(el('mark', null, cps.slice(m[i], m[i + 1]).join('')));
    pos = m[i + 1];
  }
  if (pos < cps.length) span.append(cps.slice(pos).join(''));
  if (m[1]) span.append('…');
  return span;
}

function unitCell(q, e) {
  const index = EO[q] + e, unit = unitOf(index);
  const td = el('td', 'unit');
  if (DOCS && D.uo[unit] !== null) {
    const [doc, start, end] = D.uo[unit];
    td.append(code(D.docs[doc]), ' [' + start + ', ' + end + ')');
    const t = D.et[index];
    td.append(t >= 0 ? marked(D.texts[t], D.em[index]) : el('span', 'unit-text muted', '(text not in this page: size budget)'));
  } else {
    td.append(code(D.units[unit]));
    const t = DOCS ? -1 : unitText(unit);
    if (t) td.append(el('span', 'unit-text', t));
    else if (t === 0) td.append(el('span', 'unit-text muted', '(text not in this page: size budget)'));
  }
  return td;
}

function valuesTable(q) {
  const box = el('div', 'scroll');
  const t = el('table', 'static');
  t.append(el('caption', null, 'Values of this query (4 decimals, as in report.md)'));
  const head = el('tr');
  head.append(el('th', null, 'Retriever'));
  for (let m = 0; m < M; m++) head.append(el('th', 'num', D.metrics[m]));
  if (D.base !== null) head.append(el('th', 'num', 'Δ ' + D.metrics[state.metric] + ' vs baseline'));
  head.append(el('th', 'num', 'Unjudged in the top units shown'));
  t.createTHead().append(head);
  const body = t.createTBody();
  for (let r = 0; r < R; r++) {
    const tr = el('tr');
    tr.append(el('th', null, D.labels[r] + (r === D.base ? ' (baseline)' : '')));
    for (let m = 0; m < M; m++) { const v = value(r, m, q); tr.append(el('td', 'num', v === null ? '–' : fmt4(v))); }
    if (D.base !== null) {
      const d = delta(r, state.metric, q);
      tr.append(el('td', 'num', r === D.base ? '–' : d === NONE ? 'n/a' : signed4(d) + arrow(d)));
    }
    const entries = ranking(r, q);
    const holes = entries.filter(e => grade(q, e) === null).length;
    tr.append(el('td', 'num', holes + ' of ' + entries.length));
    body.append(tr);
  }
  box.append(t);
  return box;
}

function evidenceList(q) {
  const rows = D.ev[q];
  const box = el('div');
  if (!rows.length) { box.append(el('p', null, 'Evidence: none (the query is judged by document only).')); return box; }
  box.append(el('h3', null, 'Evidence (' + rows.length + ' span' + (rows.length === 1 ? '' : 's') + ')'));
  const list = el('ul');
  for (const [doc, start, end, g, t] of rows) {
    const li = el('li');
    li.append(code(D.docs[doc]), ' [' + start + ', ' + end + ') grade ' + fmtGrade(g));
    if (t >= 0) li.append(': “', el('mark', null, D.texts[t]), '”');
    list.append(li);
  }
  box.append(list);
  return box;
}

function panel(r, other, q) {
  const box = el('section', 'panel');
  box.dataset.retriever = D.labels[r];
  box.append(el('h3', null, D.labels[r] + (r === D.base ? ' (baseline)' : '')));
  const entries = ranking(r, q);
  const others = other >= 0 ? ranking(other, q) : null;
  const read = DOCS ? readCount(r, q) : entries.length;
  if (!entries.length) {
    box.append(el('p', null, 'Nothing was retrieved for this query.'));
  } else {
    const retrieved = retrievedCount(r, q, entries);
    const held = retrieved === entries.length ? 'The ' + count(retrieved) + ' unit' + (retrieved === 1 ? '' : 's') +
      ' retrieved' : 'Top ' + entries.length + ' of the ' + count(retrieved) + ' retrieved (this page holds each ' +
      'ranking\'s top ' + D.depth + ')';
    const reads = DOCS && read < entries.length ? ' ' + D.metrics[D.main] + ' reads the first ' + read + ' (' +
      D.read.chunks + '); the rows after them are greyed.' : '';
    box.append(el('p', 'legend', held + '.' + reads + ' ✓ grade > 0 · ✗ grade 0 · ? unjudged: a hole, nobody ' +
      'judged it for this query; it scores as not relevant.'));
    const t = el('table', 'units');
    const head = el('tr');
    head.append(el('th', 'num', 'Rank'), el('th', null, 'Grade'), el('th', null, DOCS ? 'Chunk' : 'Passage'));
    if (others) head.append(el('th', 'num other', 'Rank in ' + D.labels[other]));
    t.createTHead().append(head);
    const body = t.createTBody();
    entries.forEach((e, i) => {
      const g = grade(q, e);
      const tr = el('tr', ((g === null ? 'hole' : '') + (i >= read ? ' unread' : '')).trim() || null);
      tr.dataset.unit = unitId(q, e);
      tr.dataset.grade = g === null ? 'unjudged' : fmtGrade(g);
      const gradeCell = el('td');
      gradeCell.append(gradeBadge(g));
      tr.append(el('td', 'num', String(i + 1)), gradeCell, unitCell(q, e));
      if (others) { const j = others.indexOf(e); tr.append(el('td', 'num', j >= 0 ? String(j + 1) : '—')); }
      body.append(tr);
    });
    box.append(t);
  }
  box.append(DOCS ? evidenceNumbers(r, q, entries.length) : derivation(r, q, entries));
  return box;
}

function retrievedCount(r, q, entries) {
  return D.rl === null ? entries.length : number(D.rl[1][r], q, D.rl[0]);
}

function derivationTable(name, grades) {
  const exp = D.gain === 'exponential';
  const t = el('table', 'derive');
  const head = el('tr');
  head.append(el('th', null, 'Position (i)'), el('th', null, 'Grade'));
  if (exp) head.append(el('th', null, 'Gain 2^grade − 1'));
  head.append(el('th', null, 'log₂(i+1)'), el('th', null, exp ? 'gain / log₂(i+1)' : 'grade / log₂(i+1)'));
  t.createTHead().append(head);
  const body = t.createTBody();
  let total = 0;
  const terms = [];
  grades.forEach((g, i) => {
    const value = g === null ? 0 : g;
    const gain = exp ? Math.pow(2, value) - 1 : value;
    const discount = Math.log2(i + 2);
    const term = gain / discount;
    total += term;
    terms.push(fixed4(term));
    const tr = el('tr');
    tr.append(el('td', null, String(i + 1)), el('td', null, g === null ? 'unjudged (0)' : fmtGrade(g)));
    if (exp) tr.append(el('td', null, fixed4(gain)));
    tr.append(el('td', null, fixed4(discount)), el('td', null, fixed4(term)));
    body.append(tr);
  });
  const box = el('div');
  box.append(el('h4', null, name + at(D.k)));
  if (!grades.length) { box.append(el('p', 'formula', name + at(D.k) + ' = 0 (no terms)')); return [0, box]; }
  box.append(t, el('p', 'formula', name + at(D.k) + ' = ' + terms.join(' + ') + ' = ' + fixed4(total)));
  return [total, box];
}

function derivation(r, q, entries) {
  const box = el('div', 'derivation');
  const k = D.k;
  const cut = k === null ? entries.length : Math.min(k, entries.length);
  const shown = entries.slice(0, cut);
  box.append(el('h4', null, 'How nDCG' + at(k) + ' was computed'));
  const grades = shown.map(e => grade(q, e));
  const [dcg, dcgBox] = derivationTable('DCG', grades);
  const ideal = [];
  for (let e = 0; e < D.en[q]; e++) { const g = grade(q, e); if (g !== null && g > 0) ideal.push(g); }
  ideal.sort((a, b) => b - a);
  const idealCut = k === null ? ideal : ideal.slice(0, k);
  const [idcg, idcgBox] = derivationTable('IDCG', idealCut);
  box.append(dcgBox);
  box.append(el('p', null, 'Ideal order (all judged passages with grade > 0, best first, ' +
    (k === null ? 'not cut' : 'cut at ' + k) + '): [' + (idealCut.map(fmtGrade).join(', ') ||
    'nothing: no passage is judged relevant') + ']'));
  box.append(idcgBox);
  const result = el('p', 'result');
  if (idcg > 0) result.textContent = 'nDCG' + at(k) + ' = DCG' + at(k) + ' / IDCG' + at(k) + ' = ' + fixed4(dcg) +
    ' / ' + fixed4(idcg) + ' = ' + fixed4(dcg / idcg);
  else if (D.noRelevant === 'zero') result.textContent = 'nDCG' + at(k) + ' = 0.0000: no passage is judged relevant (no_relevant: zero).';
  else result.textContent = 'nDCG' + at(k) + ' is undefined: no passage is judged relevant (left out of the mean).';
  box.append(result);
  if (D.ndcg !== null) box.append(el('p', 'muted', 'The run\'s value of ' + D.metrics[D.ndcg] + ': ' + fmt4(value(r, D.ndcg, q)) + '.'));
  if ((k === null ? D.topk : k) > D.depth) box.append(el('p', 'muted', 'Only the top ' + D.depth + ' units of each ranking are in this page: terms past rank ' + D.depth + ' are not shown.'));
  const missed = [];
  for (let e = 0; e < D.en[q]; e++) { const g = grade(q, e); if (g !== null && g > 0 && !shown.includes(e)) missed.push(e); }
  if (missed.length) {
    const where = k !== null ? 'not in the top ' + k : D.depth < D.topk ? 'not in the top ' + D.depth + ' shown' : 'not retrieved';
    box.append(el('h4', null, 'Relevant passages ' + where));
    const list = el('ul', 'missed');
    for (const e of missed) {
      const li = el('li');
      li.dataset.unit = unitId(q, e);
      li.append(code(unitId(q, e)), ' (grade ' + fmtGrade(grade(q, e)) + ')');
      const t = unitText(unitOf(EO[q] + e));
      if (t) li.append(el('span', 'unit-text', t));
      list.append(li);
    }
    box.append(list);
  }
  return box;
}

function readCount(r, q) { return number(D.nr[r][1], q, D.nr[r][0]); }

function evidenceNumbers(r, q, listed) {
  // The counts are report.md's own (rag_eval._report.retrieved_chunks.chunks_and_evidence): the chunks the main
  // metric reads, its top k or those that fit its budget; the quotients are worked out here.
  const box = el('div', 'derivation');
  const covered = D.ec[r][3 * q], total = D.ec[r][3 * q + 1], read = D.ec[r][3 * q + 2];
  const n = readCount(r, q), chunks = D.read.chunks;
  box.append(el('h4', null, 'Evidence in ' + chunks + ' (' + n + ' chunk' + (n === 1 ? '' : 's') + ' read)'));
  if (n === 0 && listed > 0 && D.read.unit !== null) {
    box.append(el('p', null, 'Nothing is read: the first chunk alone is larger than ' + count(D.read.k) + ' ' +
      D.read.unit + '.'));
  }
  if (n > listed && listed > 0) {
    box.append(el('p', 'muted', 'Only the top ' + listed + ' of the ' + n + ' chunks read are listed above; ' +
      'the numbers count them all.'));
  }
  const p = el('p', 'formula');
  if (total === 0) {
    p.textContent = 'No evidence span for this query, so its evidence metrics are ' +
      (D.noRelevant === 'zero' ? 'scored 0 (no_relevant: zero).' : 'left out of the means.');
  } else {
    const iouBase = read + total - covered;
    p.textContent = 'evidence recall = ' + count(covered) + ' / ' + count(total) + ' = ' + fixed4(covered / total) +
      '; precision = ' + (read ? count(covered) + ' / ' + count(read) + ' = ' + fixed4(covered / read) : '0.0000 (nothing retrieved)') +
      '; IoU = ' + count(covered) + ' / (' + count(read) + ' + ' + count(total - covered) + ') = ' + fixed4(covered / iouBase);
  }
  box.append(p);
  const runs = D.read.metrics.filter(m => m !== null);
  if (runs.length) {
    box.append(el('p', 'muted run-values', 'The run\'s values: ' +
      runs.map(m => D.metrics[m] + ' ' + fmt4(value(r, m, q))).join('; ') + '.'));
  }
  const missed = D.miss[r][q];
  if (total > 0) {
    if (!missed.length) box.append(el('p', null, 'Every character of the evidence lies inside ' + chunks + '.'));
    else {
      box.append(el('p', null, 'Evidence not inside ' + chunks + ':'));
      const list = el('ul', 'missed');
      for (const [doc, start, end] of missed) { const li = el('li'); li.append(code(D.docs[doc]), ' [' + start + ', ' + end + ')'); list.append(li); }
      box.append(list);
    }
  }
  return box;
}

function select(id, labelText, options, chosen) {
  const label = el('label', null, labelText);
  const s = el('select');
  s.id = id;
  for (const [value, text] of options) { const o = el('option', null, text); o.value = String(value); s.append(o); }
  s.value = String(chosen);
  label.append(s);
  return [label, s];
}

function fillPanels(q) {
  const box = document.getElementById('detail-panels');
  box.className = 'panels' + (picks.b >= 0 ? ' two' : '');
  box.replaceChildren(panel(picks.a, picks.b, q));
  if (picks.b >= 0) box.append(panel(picks.b, picks.a, q));
}

function fillDetail(q) {
  current = q;
  const qidBox = document.getElementById('detail-qid');
  qidBox.textContent = D.qids[q];
  qidBox.title = D.qids[q];  // the heading shows 2 lines at most; a long id is given in full below it
  const position = order.indexOf(q);
  const prev = document.getElementById('detail-prev'), next = document.getElementById('detail-next');
  prev.disabled = position <= 0;
  next.disabled = position < 0 || position >= order.length - 1;
  const parts = [];
  if (D.qids[q].length > LONG_ID) {
    const full = el('details', 'qid-full');
    full.append(el('summary', null, 'The full query id (' + count(Array.from(D.qids[q]).length) + ' characters)'),
      code(D.qids[q]));
    parts.push(full);
  }
  parts.push(el('p', 'qtext-full', D.qtext[q]));
  if (D.qtags[q].length) {
    const tags = el('p');
    tags.append('Tags: ');
    for (const t of D.qtags[q]) tags.append(el('span', 'tag', tagText(t)));
    parts.push(tags);
  }
  parts.push(valuesTable(q));
  if (DOCS) parts.push(evidenceList(q));
  const choices = D.labels.map((label, r) => [r, label + (r === D.base ? ' (baseline)' : '')]);
  const [labelA, a] = select('pick-a', 'Ranking of', choices, picks.a);
  const [labelB, b] = select('pick-b', 'Side by side with', [[-1, '— none —'], ...choices], picks.b);
  a.addEventListener('change', () => { picks.a = Number(a.value); fillPanels(current); });
  b.addEventListener('change', () => { picks.b = Number(b.value); fillPanels(current); });
  const pickBox = el('div', 'picks');
  pickBox.append(labelA, labelB);
  const panels = el('div', 'panels');
  panels.id = 'detail-panels';
  parts.push(pickBox, panels);
  detailBody.replaceChildren(...parts);
  fillPanels(q);
}

function linkTo(q) {  // the page's URL names the query open (a link to copy), #q= and the id percent-encoded
  const target = q < 0 ? location.pathname + location.search : '#q=' + encodeURIComponent(D.qids[q]);
  try { history.replaceState(null, '', target); } catch (error) { /* a page that may not change its URL */ }
}

function openDetail(q) {
  fillDetail(q);
  if (!dialog.open) dialog.showModal();
  linkTo(q);
}

function step(by) {
  const position = order.indexOf(current) + by;
  if (position < 0 || position >= order.length) return;
  fillDetail(order[position]);
  linkTo(current);
  state.page = Math.floor(position / state.size);
  state.row = position % state.size;
  render();
}
document.getElementById('detail-prev').addEventListener('click', () => step(-1));
document.getElementById('detail-next').addEventListener('click', () => step(1));
document.getElementById('detail-close').addEventListener('click', () => dialog.close());
dialog.addEventListener('close', () => {
  linkTo(-1);
  const row = table.querySelector('tbody tr[data-q="' + current + '"]');
  if (row) focusRow(rowsOfPage().indexOf(row));
});

state.search = (document.getElementById('search') || { value: '' }).value;
refilter();
function queryOfHash() {
  // #q=<id>: the id percent-encoded (as the page writes it: '#' is %23, '%' is %25), else as typed. -1: none asked.
  const hash = location.hash;
  if (!hash.startsWith('#q=')) return -1;
  const raw = hash.slice(3);
  if (!raw) return -1;
  let decoded = null;
  try { decoded = decodeURIComponent(raw); } catch (error) { decoded = null; }
  let q = decoded === null ? -1 : D.qids.indexOf(decoded);
  if (q < 0) q = D.qids.indexOf(raw);
  const note = document.getElementById('link-note');
  if (q < 0) {
    note.textContent = 'The link names no query of this run: ' + (decoded === null ? raw : decoded) + '.';
    note.hidden = false;
    return -2;
  }
  note.hidden = true;
  return q;
}
function openFromHash() {
  const q = queryOfHash();
  if (q >= 0 && !(dialog.open && current === q)) openDetail(q);
}
window.addEventListener('hashchange', openFromHash);
openFromHash();
performance.mark('report-ready');
document.documentElement.setAttribute('data-ready', '');
requestAnimationFrame(() => requestAnimationFrame(() => performance.mark('report-painted')));
})();
"""
