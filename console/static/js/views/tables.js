// The tables of a branch, and the search of the whole branch.

import { h, errorBox, field, confirmButton } from '../dom.js';
import { call, paths } from '../api.js';
import { links, go, flash } from '../nav.js';
import { branchSearch } from './search.js';

// tablesView lists the branch's tables, creates and deletes tables, and
// offers the branch-wide search.
export async function tablesView(ctx) {
  const details = await call('GET', paths.branch(ctx.ws, ctx.db, ctx.branch));
  const tables = (details.schema && details.schema.tables) || [];
  const rowErr = errorBox({ id: 'table-error' });
  const list = tables.length === 0 ? h('p', null, 'No table yet.') : h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'tables' },
    h('thead', null, h('tr', null, h('th', null, 'Table'), h('th', null, 'Columns'), h('th', null, ''))),
    h('tbody', null, tables.map((t) => h('tr', { dataset: { table: t.name } },
      h('td', null, h('a', { href: links.table(ctx.ws, ctx.db, ctx.branch, t.name) }, t.name)),
      h('td', null, t.columns.map((c) => c.name).join(', ')),
      h('td', { class: 'actions' },
        h('a', { href: links.tableTab(ctx.ws, ctx.db, ctx.branch, t.name, 'schema') }, 'Schema'),
        confirmButton('Delete', `Delete ${t.name} and its records?`, async () => {
          rowErr.show(null);
          try {
            await call('DELETE', paths.table(ctx.ws, ctx.db, ctx.branch, t.name));
          } catch (e) {
            rowErr.show(e);
            return;
          }
          flash(`Table ${t.name} deleted.`);
          go(links.branch(ctx.ws, ctx.db, ctx.branch), { replace: true });
        })))))));

  const err = errorBox({ id: 'create-table-error' });
  const name = h('input', { id: 'new-table-name', required: true, autocomplete: 'off' });
  const create = h('form', {
    class: 'inline-form',
    id: 'create-table',
    onsubmit: async (ev) => {
      ev.preventDefault();
      err.show(null);
      const n = name.value.trim();
      try {
        await call('PUT', paths.table(ctx.ws, ctx.db, ctx.branch, n));
      } catch (e) {
        err.show(e);
        return;
      }
      flash(`Table ${n} created: add its columns.`);
      go(links.tableTab(ctx.ws, ctx.db, ctx.branch, n, 'schema'));
    },
  }, field('Name', name), h('button', { type: 'submit' }, 'Create table'), err);

  return h('section', null,
    h('h1', null, `Tables of ${ctx.db}:${ctx.branch}`),
    list, rowErr,
    h('h2', null, 'New table'), create,
    h('h2', null, 'Search the branch'),
    await branchSearch(ctx));
}

// branchSearchView is the branch-wide search on its own page.
export async function branchSearchView(ctx) {
  return h('section', null, h('h1', null, `Search ${ctx.db}:${ctx.branch}`), await branchSearch(ctx));
}
