// Typo-tolerant search of a table or a whole branch, with highlights.

import { h, errorBox, field, select, highlighted } from '../dom.js';
import { call, paths } from '../api.js';
import { links, go } from '../nav.js';

// flattenHighlight turns {col: [frag…]} or nested objects of it into
// [dotted column, fragments] pairs.
function flattenHighlight(hl, prefix = '') {
  const out = [];
  for (const [k, v] of Object.entries(hl || {})) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (Array.isArray(v)) out.push([name, v]);
    else if (v && typeof v === 'object') out.push(...flattenHighlight(v, name));
  }
  return out;
}

// hit renders one search result: its record link, table, score and the
// highlighted fragments of each matched column.
function hit(ctx, rec) {
  const meta = rec.svc || rec.xata || {};
  const table = meta.table || ctx.table;
  const frags = flattenHighlight(meta.highlight);
  return h('li', { class: 'hit', dataset: { id: rec.id, table } },
    h('div', { class: 'hit-head' },
      h('a', { href: links.record(ctx.ws, ctx.db, ctx.branch, table, rec.id) }, `${table} / ${rec.id}`),
      typeof meta.score === 'number' ? h('span', { class: 'score' }, `score ${meta.score.toFixed(3)}`) : null),
    frags.length === 0 ? null : h('dl', { class: 'highlights' }, frags.map(([col, list]) => [
      h('dt', null, col),
      h('dd', null, list.map((f, i) => [i > 0 ? ' … ' : null, h('span', { class: 'fragment' }, highlighted(f))])),
    ])));
}

// searchPanel is the search form and, when the URL carries a query, its
// results. target is the URL of the view for a query object.
async function searchPanel(ctx, apiPath, target) {
  const q = ctx.query.get('q') || '';
  const fuzziness = ctx.query.get('fuzziness') || '1';
  const prefix = ctx.query.get('prefix') === 'phrase';
  const input = h('input', { type: 'search', id: 'search-q', value: q, required: true, autocomplete: 'off', 'aria-label': 'Search text' });
  const fuzz = select({ id: 'search-fuzziness' }, [['0', 'exact'], ['1', '1 typo'], ['2', '2 typos']], fuzziness);
  const pre = h('input', { type: 'checkbox', id: 'search-prefix', checked: prefix });
  const err = errorBox({ id: 'search-error' });
  const form = h('form', {
    class: 'search-form',
    role: 'search',
    onsubmit: (ev) => {
      ev.preventDefault();
      go(target({ q: input.value.trim(), fuzziness: fuzz.value === '1' ? '' : fuzz.value, prefix: pre.checked ? 'phrase' : '' }));
    },
  }, input, field('Typos', fuzz), h('label', { class: 'check' }, pre, ' prefixes'), h('button', { type: 'submit', class: 'primary' }, 'Search'));
  const results = h('div', { id: 'search-results-box' });
  if (q) {
    try {
      const res = await call('POST', apiPath, { query: q, fuzziness: Number(fuzziness), prefix: prefix ? 'phrase' : 'disabled', page: { size: 50 } });
      const recs = res.records || [];
      results.append(
        h('p', { class: 'count', id: 'search-count' }, `${recs.length === 50 ? 'First 50' : recs.length} result${recs.length === 1 ? '' : 's'} for “${q}”${res.warning ? ` (${res.warning})` : ''}`),
        h('ol', { class: 'hits', id: 'search-results' }, recs.map((r) => hit(ctx, r))));
    } catch (e) {
      err.show(e);
    }
  }
  return h('section', null, form, err, results);
}

// tableSearchView searches one table.
export async function tableSearchView(ctx) {
  return searchPanel(ctx, `${paths.table(ctx.ws, ctx.db, ctx.branch, ctx.table)}/search`,
    (q) => links.tableTab(ctx.ws, ctx.db, ctx.branch, ctx.table, 'search', q));
}

// branchSearch searches every table of the branch.
export async function branchSearch(ctx) {
  return searchPanel(ctx, `${paths.branch(ctx.ws, ctx.db, ctx.branch)}/search`,
    (q) => links.branchSearch(ctx.ws, ctx.db, ctx.branch, q.q) + (q.fuzziness ? `&fuzziness=${q.fuzziness}` : '') + (q.prefix ? '&prefix=phrase' : ''));
}
