// A table's schema: columns with their types and settings; add, rename
// and delete columns.

import { h, errorBox, field, select, confirmButton, clear } from '../dom.js';
import { call, paths } from '../api.js';
import { links, go, flash } from '../nav.js';
import { tableOf } from '../values.js';

const TYPES = ['string', 'text', 'email', 'int', 'float', 'bool', 'datetime', 'multiple', 'json', 'link', 'vector', 'file', 'file[]'];

// settingsText describes a column's settings in words.
function settingsText(c) {
  const out = [];
  if (c.link) out.push(`links to ${c.link.table}`);
  if (c.vector) out.push(`dimension ${c.vector.dimension}`);
  const file = c.file || c['file[]'];
  if (file && file.defaultPublicAccess) out.push('public by default');
  if (c.notNull) out.push('not null');
  if (c.unique) out.push('unique');
  if (c.defaultValue !== undefined) out.push(`default ${JSON.stringify(c.defaultValue)}`);
  return out.join(', ');
}

// flatten lists columns with object sub-columns as dotted names.
function flatten(cols, prefix = '') {
  return cols.flatMap((c) => {
    const name = prefix + c.name;
    return [{ ...c, path: name }, ...(c.type === 'object' && c.columns ? flatten(c.columns, `${name}.`) : [])];
  });
}

// schemaView shows and edits the columns of a table.
export async function schemaView(ctx) {
  const details = await call('GET', paths.branch(ctx.ws, ctx.db, ctx.branch));
  const table = tableOf(details, ctx.table);
  if (!table) throw new Error(`table [${ctx.table}] not found`);
  const api = paths.table(ctx.ws, ctx.db, ctx.branch, ctx.table);
  const reload = (msg) => { flash(msg); go(links.tableTab(ctx.ws, ctx.db, ctx.branch, ctx.table, 'schema'), { replace: true }); };
  const colErr = errorBox({ id: 'column-error' });

  function renameForm(c, nameCell) {
    const input = h('input', { id: `rename-${c.path}`, value: c.name, 'aria-label': `New name of ${c.path}`, required: true, autocomplete: 'off' });
    const form = h('form', {
      class: 'rename',
      onsubmit: async (ev) => {
        ev.preventDefault();
        colErr.show(null);
        try {
          await call('PATCH', `${api}/columns/${encodeURIComponent(c.path)}`, { name: input.value.trim() });
        } catch (e) {
          colErr.show(e);
          return;
        }
        reload(`Column ${c.path} renamed to ${input.value.trim()}.`);
      },
    }, input, h('button', { type: 'submit', class: 'primary' }, 'Save'),
    h('button', { type: 'button', onclick: () => clear(nameCell).append(h('code', null, c.path)) }, 'Cancel'));
    clear(nameCell).append(form);
    input.select();
  }

  const rows = flatten(table.columns).map((c) => {
    const nameCell = h('td', null, h('code', null, c.path));
    return h('tr', { dataset: { column: c.path } },
      nameCell,
      h('td', null, c.type),
      h('td', null, settingsText(c)),
      h('td', { class: 'actions' },
        h('button', { type: 'button', dataset: { action: 'rename' }, onclick: () => renameForm(c, nameCell) }, 'Rename'),
        confirmButton('Delete', `Delete ${c.path} and its data?`, async () => {
          colErr.show(null);
          try {
            await call('DELETE', `${api}/columns/${encodeURIComponent(c.path)}`);
          } catch (e) {
            colErr.show(e);
            return;
          }
          reload(`Column ${c.path} deleted.`);
        })));
  });

  // The add-column form shows the settings of the chosen type only.
  const tables = details.schema.tables.map((t) => t.name);
  const err = errorBox({ id: 'add-column-error' });
  const name = h('input', { id: 'col-name', required: true, autocomplete: 'off' });
  const type = select({ id: 'col-type' }, TYPES, 'string');
  const linkTo = select({ id: 'col-link' }, tables);
  const dim = h('input', { id: 'col-dim', type: 'text', inputmode: 'numeric', value: '3' });
  const pub = h('input', { id: 'col-public', type: 'checkbox' });
  const notNull = h('input', { id: 'col-notnull', type: 'checkbox' });
  const unique = h('input', { id: 'col-unique', type: 'checkbox' });
  const def = h('input', { id: 'col-default', autocomplete: 'off' });
  const linkField = field('Links to', linkTo);
  const dimField = field('Dimension', dim);
  const pubField = h('label', { class: 'check' }, pub, ' public by default');
  const sync = () => {
    linkField.hidden = type.value !== 'link';
    dimField.hidden = type.value !== 'vector';
    pubField.hidden = type.value !== 'file' && type.value !== 'file[]';
  };
  type.addEventListener('change', sync);
  sync();
  const add = h('form', {
    id: 'add-column',
    class: 'inline-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      err.show(null);
      const col = { name: name.value.trim(), type: type.value };
      if (type.value === 'link') col.link = { table: linkTo.value };
      if (type.value === 'vector') col.vector = { dimension: Number(dim.value) };
      if (type.value === 'file' || type.value === 'file[]') col[type.value] = { defaultPublicAccess: pub.checked };
      if (notNull.checked) col.notNull = true;
      if (unique.checked) col.unique = true;
      if (def.value !== '') col.defaultValue = def.value;
      try {
        await call('POST', `${api}/columns`, col);
      } catch (e) {
        err.show(e);
        return;
      }
      reload(`Column ${col.name} added.`);
    },
  },
  field('Name', name), field('Type', type), linkField, dimField, pubField,
  h('label', { class: 'check' }, notNull, ' not null'),
  h('label', { class: 'check' }, unique, ' unique'),
  field('Default', def),
  h('button', { type: 'submit', class: 'primary' }, 'Add column'),
  err);

  const revLinks = table.revLinks || [];
  return h('section', null,
    h('h1', null, `Schema of ${ctx.table}`),
    table.columns.length === 0 ? h('p', null, 'No column yet.') : h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'columns' },
      h('thead', null, h('tr', null, h('th', null, 'Column'), h('th', null, 'Type'), h('th', null, 'Settings'), h('th', null, ''))),
      h('tbody', null, rows))),
    colErr,
    revLinks.length ? h('p', { class: 'hint' }, 'Linked from: ', revLinks.map((l) => `${l.table}.${l.column}`).join(', ')) : null,
    h('h2', null, 'Add a column'),
    add);
}
