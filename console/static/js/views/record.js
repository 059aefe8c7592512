// One record: view and edit it, insert a new one, delete it. The console
// converts what the user typed only as far as the column type says (a
// number for int and float, true/false for bool) and otherwise sends the
// text as it is, so validation is the server's and its message is shown.

import { h, errorBox, confirmButton, select } from '../dom.js';
import { call, paths, download } from '../api.js';
import { links, go, flash } from '../nav.js';
import { readableTime, tableOf } from '../values.js';

const NUMBER = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

// readFile returns a file input's file as an input file value.
function readFile(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => {
      const url = String(r.result);
      resolve({ name: file.name, mediaType: file.type || 'application/octet-stream', base64Content: url.slice(url.indexOf(',') + 1) });
    };
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

// keptFile is the input value that keeps a stored file[] item as it is.
function keptFile(f) {
  return { id: f.id, name: f.name, mediaType: f.mediaType, enablePublicUrl: f.enablePublicUrl };
}

// editorFor returns the control of one column and read(), which gives the
// value to send: undefined when unchanged (for an update) or empty (for an
// insert), null to clear the column.
function editorFor(ctx, col, value, recordId) {
  const id = `field-${col.name}`;
  const text = (v, attrs = {}) => {
    const initial = String(v);
    const el = h('input', { id, name: col.name, type: 'text', value: initial, autocomplete: 'off', spellcheck: 'false', ...attrs });
    return { el, raw: () => el.value, initial };
  };
  const area = (v, rows = 4) => {
    const initial = String(v);
    const el = h('textarea', { id, name: col.name, rows, spellcheck: 'false', value: initial });
    return { el, raw: () => el.value, initial };
  };
  const plain = (ed, convert) => ({
    el: ed.el,
    read: () => {
      const v = ed.raw();
      if (v === ed.initial) return undefined;
      return v.trim() === '' ? null : convert(v);
    },
  });
  const asIs = (v) => v;
  switch (col.type) {
    case 'int':
    case 'float':
      return plain(text(value ?? '', { inputmode: col.type === 'int' ? 'numeric' : 'decimal' }),
        (v) => (NUMBER.test(v.trim()) ? Number(v.trim()) : v));
    case 'bool': {
      const initial = value === true ? 'true' : value === false ? 'false' : '';
      const el = select({ id, name: col.name }, [['', '(null)'], ['true', 'true'], ['false', 'false']], initial);
      return { el, read: () => (el.value === initial ? undefined : el.value === '' ? null : el.value === 'true') };
    }
    case 'text':
      return plain(area(value ?? ''), asIs);
    case 'multiple':
      return plain(area((value || []).join('\n'), 3), (v) => v.split('\n').map((x) => x.trim()).filter(Boolean));
    case 'json': {
      let pretty = value ?? '';
      try {
        if (value != null) pretty = JSON.stringify(JSON.parse(value), null, 2);
      } catch {
        pretty = value;
      }
      return plain(area(pretty, 5), asIs);
    }
    case 'object':
    case 'vector': {
      const ed = col.type === 'object' ? area(value == null ? '' : JSON.stringify(value, null, 2), 4) : text(value == null ? '' : JSON.stringify(value));
      return plain(ed, (v) => {
        try {
          return JSON.parse(v);
        } catch {
          return v;
        }
      });
    }
    case 'link':
      return plain(text(value && typeof value === 'object' ? value.id : value ?? '', { placeholder: `id of a record of ${col.link.table}` }), asIs);
    case 'datetime':
      return plain(text(value ?? '', { placeholder: '2024-01-31T12:00:00Z' }), asIs);
    case 'email':
      return plain(text(value ?? '', { inputmode: 'email' }), asIs);
    case 'file':
      return fileEditor(ctx, col, value, recordId, id);
    case 'file[]':
      return fileArrayEditor(ctx, col, value || [], recordId, id);
    default:
      return plain(text(value ?? ''), asIs);
  }
}

function downloadButton(ctx, col, recordId, file, fileId) {
  return h('button', {
    type: 'button', class: 'link',
    onclick: () => download(paths.file(ctx.ws, ctx.db, ctx.branch, ctx.table, recordId, col.name, fileId), file.name),
  }, `⬇ ${file.name || '(unnamed)'}`);
}

function fileEditor(ctx, col, value, recordId, id) {
  const input = h('input', { type: 'file', id, name: col.name });
  const remove = h('input', { type: 'checkbox', id: `${id}-remove` });
  const el = h('div', { class: 'file-editor' },
    value ? h('div', null, downloadButton(ctx, col, recordId, value, ''), ` ${value.mediaType}, ${value.size} bytes `,
      h('label', { class: 'check' }, remove, ' remove')) : null,
    input);
  return {
    el,
    read: async () => {
      if (input.files.length) return readFile(input.files[0]);
      if (remove.checked) return null;
      return undefined;
    },
  };
}

function fileArrayEditor(ctx, col, items, recordId, id) {
  const removes = items.map(() => h('input', { type: 'checkbox' }));
  const input = h('input', { type: 'file', id, name: col.name, multiple: true });
  const el = h('div', { class: 'file-editor' },
    h('ul', null, items.map((f, i) => h('li', null, downloadButton(ctx, col, recordId, f, f.id), ' ',
      h('label', { class: 'check' }, removes[i], ' remove')))),
    h('span', { class: 'hint' }, 'Add files: '), input);
  return {
    el,
    read: async () => {
      const removed = removes.some((r) => r.checked);
      if (!removed && input.files.length === 0) return undefined;
      const kept = items.filter((_, i) => !removes[i].checked).map(keptFile);
      const added = await Promise.all([...input.files].map(readFile));
      return [...kept, ...added];
    },
  };
}

// editor is the form of a record, or of a new one when rec is null.
function editor(ctx, table, rec) {
  const api = paths.table(ctx.ws, ctx.db, ctx.branch, ctx.table);
  const err = errorBox({ id: 'record-error' });
  const status = h('p', { id: 'record-status', role: 'status', class: 'hint' });
  const editors = table.columns.map((c) => [c, editorFor(ctx, c, rec ? rec[c.name] : undefined, rec && rec.id)]);
  const newId = rec ? null : h('input', { id: 'field-id', type: 'text', autocomplete: 'off', placeholder: 'generated when empty' });
  const meta = rec && (rec.svc || rec.xata);
  const save = h('button', { type: 'submit', id: 'save-record', class: 'primary' }, rec ? 'Save' : 'Insert');

  async function submit(ev) {
    ev.preventDefault();
    err.show(null);
    status.textContent = '';
    const body = {};
    for (const [c, ed] of editors) {
      const v = await ed.read();
      if (v !== undefined && !(rec === null && v === null)) body[c.name] = v;
    }
    save.disabled = true;
    try {
      if (rec) {
        if (Object.keys(body).length === 0) {
          status.textContent = 'Nothing changed.';
          return;
        }
        const res = await call('PATCH', `${api}/data/${encodeURIComponent(rec.id)}?ifVersion=${meta.version}`, body);
        flash(`Saved: version ${(res.svc || res.xata || {}).version}.`);
        go(links.record(ctx.ws, ctx.db, ctx.branch, ctx.table, rec.id), { replace: true });
      } else {
        const want = newId.value.trim();
        const res = want
          ? await call('PUT', `${api}/data/${encodeURIComponent(want)}?createOnly=true`, body)
          : await call('POST', `${api}/data`, body);
        flash(`Record ${res.id} inserted.`);
        go(links.record(ctx.ws, ctx.db, ctx.branch, ctx.table, res.id));
      }
    } catch (e) {
      err.show(e);
    } finally {
      save.disabled = false;
    }
  }

  const rows = editors.map(([c, ed]) => h('div', { class: 'field' },
    h('label', { for: `field-${c.name}`, class: 'label' }, c.name, ' ',
      h('span', { class: 'col-type' }, c.type === 'link' ? `link → ${c.link.table}` : c.type),
      c.notNull ? h('span', { class: 'badge' }, 'not null') : null,
      c.unique ? h('span', { class: 'badge' }, 'unique') : null),
    ed.el));
  const del = rec && confirmButton('Delete record', 'Confirm delete', async () => {
    err.show(null);
    try {
      await call('DELETE', `${api}/data/${encodeURIComponent(rec.id)}`);
    } catch (e) {
      err.show(e);
      return;
    }
    flash(`Record ${rec.id} deleted.`);
    go(links.table(ctx.ws, ctx.db, ctx.branch, ctx.table));
  }, { id: 'delete-record' });

  return h('section', { class: 'record' },
    h('h1', null, rec ? `Record ${rec.id}` : `New record in ${ctx.table}`),
    meta ? h('p', { class: 'hint', id: 'record-meta' }, `version ${meta.version} · created ${readableTime(meta.createdAt)} · updated ${readableTime(meta.updatedAt)}`) : null,
    h('form', { id: 'record-form', novalidate: true, onsubmit: submit },
      newId ? h('div', { class: 'field' }, h('label', { for: 'field-id', class: 'label' }, 'id ', h('span', { class: 'col-type' }, 'optional')), newId) : null,
      rows,
      err,
      h('div', { class: 'buttons' }, save,
        h('a', { href: links.table(ctx.ws, ctx.db, ctx.branch, ctx.table), class: 'button' }, 'Back to records'),
        del),
      status));
}

async function tableSchema(ctx) {
  const details = await call('GET', paths.branch(ctx.ws, ctx.db, ctx.branch));
  const table = tableOf(details, ctx.table);
  if (!table) throw new Error(`table [${ctx.table}] not found`);
  return table;
}

// recordView shows one record in its editor.
export async function recordView(ctx) {
  const [table, rec] = await Promise.all([
    tableSchema(ctx),
    call('GET', paths.record(ctx.ws, ctx.db, ctx.branch, ctx.table, ctx.id)),
  ]);
  return editor(ctx, table, rec);
}

// newRecordView is the editor of a record to insert.
export async function newRecordView(ctx) {
  return editor(ctx, await tableSchema(ctx), null);
}
