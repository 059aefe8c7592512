// The records grid: columns from the schema, values by type, a JSON filter
// editor, sort by header, cursor paging and keyboard navigation.

import { h, errorBox, select, clear } from '../dom.js';
import { call, paths } from '../api.js';
import { links, go } from '../nav.js';
import { renderValue, tableOf, sortable } from '../values.js';

const SIZES = ['10', '20', '50', '100', '200'];

// parseSort reads "column:asc|desc" from the URL.
function parseSort(s) {
  if (!s) return null;
  const i = s.lastIndexOf(':');
  const dir = s.slice(i + 1);
  if (i <= 0 || (dir !== 'asc' && dir !== 'desc')) return null;
  return { col: s.slice(0, i), dir };
}

// recordsView shows a page of the table's records.
export async function recordsView(ctx) {
  const details = await call('GET', paths.branch(ctx.ws, ctx.db, ctx.branch));
  const table = tableOf(details, ctx.table);
  if (!table) throw new Error(`table [${ctx.table}] not found`);
  const api = paths.table(ctx.ws, ctx.db, ctx.branch, ctx.table);
  const cols = [{ name: 'id', type: 'id' }, ...table.columns];
  const size = Number(ctx.query.get('size'));
  const st = {
    filterText: ctx.query.get('filter') || '',
    sort: parseSort(ctx.query.get('sort')),
    size: SIZES.includes(String(size)) ? size : 20,
    records: [],
    cursor: '',
    offset: 0,
    total: null,
    hasPrev: false,
    hasNext: false,
    focus: { r: 1, c: 0 }, // the grid cell that takes the focus
    keepFocus: false,
  };

  const filter = h('textarea', {
    id: 'filter', rows: 3, spellcheck: 'false', autocomplete: 'off',
    placeholder: '{"age": {"$ge": 30}}', 'aria-describedby': 'filter-error filter-help', value: st.filterText,
  });
  const filterErr = errorBox({ id: 'filter-error' });
  const sizeSel = select({ id: 'page-size', 'aria-label': 'Records per page' }, SIZES, String(st.size));
  const grid = h('table', { id: 'grid', class: 'grid', role: 'grid', 'aria-label': `Records of ${ctx.table}` });
  const status = h('span', { id: 'page-status', role: 'status' });
  const btn = (id, label, fn, key) => h('button', { type: 'button', id, onclick: fn, 'aria-keyshortcuts': key }, label);
  const first = btn('page-first', '« First', () => load('first'));
  const prev = btn('page-prev', '◀ Prev', () => load('prev'), 'PageUp');
  const next = btn('page-next', 'Next ▶', () => load('next'), 'PageDown');
  const last = btn('page-last', 'Last »', () => load('last'));

  // queryBody is the body of the request for a page move.
  function queryBody(kind, f) {
    switch (kind) {
      case 'next': return { page: { after: st.cursor } };
      case 'prev': return { page: { before: st.cursor } };
      case 'last': return { page: { end: st.cursor } };
      default: {
        const body = { page: { size: st.size } };
        if (f !== undefined) body.filter = f;
        if (st.sort) body.sort = [{ [st.sort.col]: st.sort.dir }];
        return body;
      }
    }
  }

  // load runs one page move; a failure keeps the page shown and reports
  // the server's message next to the filter editor.
  async function load(kind) {
    let f;
    if (kind === 'first' && st.filterText.trim()) {
      try {
        f = JSON.parse(st.filterText);
      } catch (e) {
        filterErr.show(new Error(`The filter is not valid JSON: ${e.message}`));
        return false;
      }
    }
    grid.setAttribute('aria-busy', 'true');
    try {
      const countBody = { aggs: { n: { count: '*' } } };
      if (f !== undefined) countBody.filter = f;
      const [res, agg] = await Promise.all([
        call('POST', `${api}/query`, queryBody(kind, f), { safe: true }),
        kind === 'first' ? call('POST', `${api}/aggregate`, countBody, { safe: true }) : null,
      ]);
      filterErr.show(null);
      const recs = res.records || [];
      const more = !!(res.meta && res.meta.page && res.meta.page.more);
      if (agg) st.total = agg.aggs.n;
      switch (kind) {
        case 'first': st.offset = 0; st.hasPrev = false; st.hasNext = more; break;
        case 'next': st.offset += st.records.length; st.hasPrev = true; st.hasNext = more; break;
        case 'prev': st.offset = Math.max(0, st.offset - recs.length); st.hasPrev = more; st.hasNext = true; break;
        case 'last': st.offset = Math.max(0, (st.total ?? recs.length) - recs.length); st.hasPrev = more; st.hasNext = false; break;
        default:
      }
      st.records = recs;
      st.cursor = res.meta && res.meta.page ? res.meta.page.cursor : '';
      if (kind === 'first') {
        go(links.table(ctx.ws, ctx.db, ctx.branch, ctx.table, {
          filter: st.filterText.trim(),
          sort: st.sort ? `${st.sort.col}:${st.sort.dir}` : '',
          size: st.size === 20 ? '' : st.size,
        }), { replace: true, quiet: true });
      }
      draw();
      return true;
    } catch (e) {
      filterErr.show(e);
      return false;
    } finally {
      grid.setAttribute('aria-busy', 'false');
    }
  }

  function toggleSort(col) {
    const cur = st.sort && st.sort.col === col ? st.sort.dir : '';
    st.sort = cur === '' ? { col, dir: 'asc' } : cur === 'asc' ? { col, dir: 'desc' } : null;
    load('first');
  }

  const open = (id) => go(links.record(ctx.ws, ctx.db, ctx.branch, ctx.table, id));

  function draw() {
    const head = h('tr', { role: 'row' }, cols.map((c, i) => {
      const canSort = c.type === 'id' || sortable(c);
      const dir = st.sort && st.sort.col === c.name ? st.sort.dir : '';
      return h('th', {
        role: 'columnheader', scope: 'col', tabindex: '-1',
        dataset: { col: c.name, c: i, r: 0 },
        class: canSort ? 'sortable' : null,
        'aria-sort': dir === 'asc' ? 'ascending' : dir === 'desc' ? 'descending' : canSort ? 'none' : null,
        title: canSort ? 'Sort (click or Enter)' : null,
        onclick: canSort ? () => { st.focus = { r: 0, c: i }; st.keepFocus = true; toggleSort(c.name); } : null,
      },
      h('span', { class: 'col-name' }, c.name),
      c.type !== 'id' ? h('span', { class: 'col-type' }, c.type === 'link' ? `→ ${c.link.table}` : c.type) : null,
      dir ? h('span', { class: 'sort-mark', 'aria-hidden': 'true' }, dir === 'asc' ? ' ▲' : ' ▼') : null);
    }));
    const body = st.records.length === 0
      ? [h('tr', { role: 'row' }, h('td', { role: 'gridcell', colspan: cols.length, class: 'empty', tabindex: '-1', dataset: { r: 1, c: 0 } }, 'No records.'))]
      : st.records.map((rec, r) => h('tr', { role: 'row', dataset: { id: rec.id }, 'aria-rowindex': st.offset + r + 2 },
        cols.map((c, i) => h('td', {
          role: 'gridcell', tabindex: '-1', dataset: { r: r + 1, c: i, col: c.name },
        }, c.type === 'id'
          ? h('a', { href: links.record(ctx.ws, ctx.db, ctx.branch, ctx.table, rec.id), tabindex: '-1' }, rec.id)
          : renderValue(ctx, c, rec[c.name], rec.id)))));
    clear(grid).append(h('thead', null, head), h('tbody', null, body));
    grid.setAttribute('aria-colcount', cols.length);
    if (st.total !== null) grid.setAttribute('aria-rowcount', st.total + 1);
    const n = st.records.length;
    status.textContent = n === 0 ? (st.total === null ? '' : st.total ? 'No records on this page' : 'No records')
      : `Records ${st.offset + 1}–${st.offset + n}${st.total !== null ? ` of ${st.total}` : ''}`;
    first.disabled = !st.hasPrev;
    prev.disabled = !st.hasPrev;
    next.disabled = !st.hasNext;
    last.disabled = !st.hasNext;
    const rmax = grid.rows.length - 1;
    st.focus.r = Math.min(st.focus.r, rmax);
    const target = cellAt(st.focus.r, st.focus.c) || cellAt(Math.min(1, rmax), 0);
    if (target) {
      target.tabIndex = 0;
      if (st.keepFocus) target.focus();
    }
    st.keepFocus = false;
  }

  function cellAt(r, c) {
    const row = grid.rows[r];
    return row ? row.cells[Math.min(c, row.cells.length - 1)] : null;
  }

  function focusCell(r, c) {
    const target = cellAt(r, c);
    if (!target) return;
    grid.querySelectorAll('[tabindex="0"]').forEach((el) => { el.tabIndex = -1; });
    target.tabIndex = 0;
    target.focus();
    st.focus = { r: Number(target.dataset.r), c: Number(target.dataset.c) };
  }

  // Keyboard navigation (the ARIA grid pattern): arrows move between
  // cells, Home/End to the row's ends (with Ctrl: the grid's), PageUp/
  // PageDown change page, Enter (or Space) sorts on a header, Enter opens
  // a row's record, Space unfolds a folded value.
  grid.addEventListener('keydown', async (ev) => {
    const cell = ev.target.closest('th, td');
    if (!cell || !grid.contains(cell)) return;
    const r = Number(cell.dataset.r);
    const c = Number(cell.dataset.c);
    const lastRow = grid.rows.length - 1;
    const lastCol = cols.length - 1;
    switch (ev.key) {
      case 'ArrowRight': focusCell(r, Math.min(c + 1, lastCol)); break;
      case 'ArrowLeft': focusCell(r, Math.max(c - 1, 0)); break;
      case 'ArrowDown': focusCell(Math.min(r + 1, lastRow), c); break;
      case 'ArrowUp': focusCell(Math.max(r - 1, 0), c); break;
      case 'Home': focusCell(ev.ctrlKey ? 1 : r, 0); break;
      case 'End': focusCell(ev.ctrlKey ? lastRow : r, lastCol); break;
      case 'PageDown':
      case 'PageUp': {
        const kind = ev.key === 'PageDown' ? 'next' : 'prev';
        if (kind === 'next' ? !st.hasNext : !st.hasPrev) break;
        st.focus = { r: 1, c };
        st.keepFocus = true;
        ev.preventDefault();
        await load(kind);
        return;
      }
      case 'Enter':
      case ' ':
        if (cell.tagName === 'TH') {
          if (!cell.classList.contains('sortable')) break;
          st.focus = { r: 0, c };
          st.keepFocus = true;
          toggleSort(cell.dataset.col);
        } else if (ev.key === 'Enter' && cell.parentElement.dataset.id) {
          open(cell.parentElement.dataset.id);
        } else if (ev.key === ' ' && cell.querySelector('details')) {
          const d = cell.querySelector('details');
          d.open = !d.open;
        } else {
          return;
        }
        break;
      default:
        return;
    }
    ev.preventDefault();
  });
  // A click in a row opens its record, unless it was on something that
  // acts on its own (a link, a download, a folded value).
  grid.addEventListener('click', (ev) => {
    if (ev.target.closest('a, button, summary, details, th')) return;
    const tr = ev.target.closest('tr[data-id]');
    if (tr) open(tr.dataset.id);
  });

  const form = h('form', {
    class: 'filter-form',
    onsubmit: (ev) => {
      ev.preventDefault();
      st.filterText = filter.value;
      load('first');
    },
  },
  h('label', { for: 'filter', class: 'label' }, 'Filter'),
  h('div', { class: 'filter-row' },
    filter,
    h('div', { class: 'filter-side' },
      h('div', { class: 'buttons' },
        h('button', { type: 'submit', id: 'apply-filter', class: 'primary' }, 'Apply'),
        h('button', {
          type: 'button', id: 'clear-filter',
          onclick: () => { filter.value = ''; st.filterText = ''; load('first'); },
        }, 'Clear')),
      filterErr)),
  h('p', { class: 'hint', id: 'filter-help' }, 'The filter language of the query API, as JSON: {"name": "Ann"}, {"age": {"$gt": 30}}, {"$any": [{"tags": {"$includes": "x"}}, {"$exists": "email"}]}. Ctrl+Enter applies.'));
  filter.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  sizeSel.addEventListener('change', () => {
    st.size = Number(sizeSel.value);
    load('first');
  });

  if (!(await load('first'))) draw();
  return h('section', { class: 'records' },
    form,
    h('div', { class: 'toolbar' },
      h('a', { href: links.newRecord(ctx.ws, ctx.db, ctx.branch, ctx.table), class: 'button', id: 'insert-record' }, '+ Insert record'),
      h('label', { class: 'check' }, 'Per page ', sizeSel)),
    h('div', { class: 'scroll grid-box' }, grid),
    h('div', { class: 'pager' }, first, prev, status, next, last));
}
