// Summaries: group by a column with count, sum or average, drawn as bars
// and listed in a table; a datetime column becomes a time series of the
// aggregate endpoint's dateHistogram.

import { h, errorBox, field, select } from '../dom.js';
import { call, paths } from '../api.js';
import { links, go } from '../nav.js';
import { tableOf, readableTime } from '../values.js';
import { barChart, timeChart, fmt } from '../chart.js';

const GROUPABLE = ['string', 'email', 'text', 'int', 'float', 'bool', 'datetime', 'link', 'multiple'];
const INTERVALS = ['minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'];

// groupLabel is the text of a group's value.
function groupLabel(col, v) {
  if (v === null || v === undefined) return '(null)';
  if (col.type === 'link') return String(v.id ?? v);
  if (Array.isArray(v)) return v.join(', ');
  return String(v);
}

// bucketLabel shows a bucket start at the precision of its interval.
function bucketLabel(iso, interval) {
  const t = readableTime(iso);
  switch (interval) {
    case 'year': return t.slice(0, 4);
    case 'quarter':
    case 'month': return t.slice(0, 7);
    case 'week':
    case 'day': return t.slice(0, 10);
    default: return t.slice(0, 16);
  }
}

// summaryView reads its settings from the URL (by, fn, of, interval) and
// draws the result.
export async function summaryView(ctx) {
  const details = await call('GET', paths.branch(ctx.ws, ctx.db, ctx.branch));
  const table = tableOf(details, ctx.table);
  if (!table) throw new Error(`table [${ctx.table}] not found`);
  const api = paths.table(ctx.ws, ctx.db, ctx.branch, ctx.table);
  const groupCols = table.columns.filter((c) => GROUPABLE.includes(c.type));
  const numCols = table.columns.filter((c) => c.type === 'int' || c.type === 'float');
  const q = ctx.query;
  // By default, group by a column likely to have few values.
  const likely = ['link', 'bool', 'string', 'email', 'int', 'multiple', 'float', 'text', 'datetime'];
  const byDefault = [...groupCols].sort((a, b) => likely.indexOf(a.type) - likely.indexOf(b.type))[0];
  const byName = q.get('by') || (byDefault || {}).name || '';
  let fn = ['count', 'sum', 'average'].includes(q.get('fn')) ? q.get('fn') : 'count';
  const of = q.get('of') || (numCols[0] || {}).name || '';
  if (fn !== 'count' && !of) fn = 'count';
  const interval = INTERVALS.includes(q.get('interval')) ? q.get('interval') : 'month';

  const by = select({ id: 'sum-by' }, groupCols.map((c) => [c.name, `${c.name} (${c.type})`]), byName);
  const fnSel = select({ id: 'sum-fn' }, [['count', 'count'], ['sum', 'sum'], ['average', 'average']], fn);
  const ofSel = select({ id: 'sum-of' }, numCols.map((c) => c.name), of);
  const intSel = select({ id: 'sum-interval' }, INTERVALS, interval);
  const ofField = field('Of column', ofSel);
  const intField = field('Interval', intSel);
  const sync = () => {
    ofField.hidden = fnSel.value === 'count';
    const col = groupCols.find((c) => c.name === by.value);
    intField.hidden = !col || col.type !== 'datetime';
  };
  by.addEventListener('change', sync);
  fnSel.addEventListener('change', sync);
  sync();
  const err = errorBox({ id: 'summary-error' });
  const form = h('form', {
    class: 'inline-form',
    id: 'summary-form',
    onsubmit: (ev) => {
      ev.preventDefault();
      go(links.tableTab(ctx.ws, ctx.db, ctx.branch, ctx.table, 'summary', {
        by: by.value, fn: fnSel.value, of: fnSel.value === 'count' ? '' : ofSel.value,
        interval: intField.hidden ? '' : intSel.value,
      }), { replace: true });
    },
  }, field('Group by', by), field('Function', fnSel), ofField, intField,
  h('button', { type: 'submit', class: 'primary', id: 'sum-run' }, 'Draw'));

  const out = h('div', { class: 'summary-out' });
  const col = groupCols.find((c) => c.name === byName);
  if (!col) {
    out.append(h('p', null, 'This table has no column to group by.'));
    return h('section', null, h('h1', null, `Summary of ${ctx.table}`), form, out);
  }
  const what = fn === 'count' ? 'count' : `${fn} of ${of}`;
  try {
    if (col.type === 'datetime') {
      const hist = { column: col.name, calendarInterval: interval };
      if (fn !== 'count') hist.aggs = { v: { [fn]: { column: of } } };
      const res = await call('POST', `${api}/aggregate`, { aggs: { h: { dateHistogram: hist } } }, { safe: true });
      const buckets = res.aggs.h.values || [];
      const points = buckets.map((b) => ({
        t: new Date(b.$key), key: b.$key, label: bucketLabel(b.$key, interval),
        value: fn === 'count' ? b.$count : b.v,
      }));
      const title = `${what} by ${interval} of ${col.name}`;
      const box = h('div', { class: 'chart-box', id: 'chart' });
      out.append(h('h2', null, title), box, resultTable([`${col.name} (${interval})`, what], points.map((p) => [p.label, p.value])));
      setTimeout(() => timeChart(box, points, title));
    } else {
      const name = col.name === 'value' ? 'result' : 'value';
      const res = await call('POST', `${api}/summarize`, {
        columns: [col.name],
        summaries: { [name]: { [fn]: fn === 'count' ? '*' : of } },
        sort: [{ [name]: 'desc' }],
        page: { size: 50 },
      });
      const data = (res.summaries || []).map((g) => ({ label: groupLabel(col, g[col.name]), value: g[name] }));
      const title = `${what} by ${col.name}`;
      const box = h('div', { class: 'chart-box', id: 'chart' });
      out.append(h('h2', null, title), box, resultTable([col.name, what], data.map((d) => [d.label, d.value])));
      setTimeout(() => barChart(box, data, title));
    }
  } catch (e) {
    err.show(e);
  }
  return h('section', null, h('h1', null, `Summary of ${ctx.table}`), form, err, out);
}

function resultTable(headers, rows) {
  return h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'summary-table' },
    h('thead', null, h('tr', null, headers.map((t, i) => h('th', { class: i ? 'num' : null }, t)))),
    h('tbody', null, rows.map(([k, v]) => h('tr', null, h('td', null, k), h('td', { class: 'num' }, fmt(v)))))));
}
