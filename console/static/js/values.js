// Rendering of record values by column type. Values become text nodes or
// attribute values only: a value holding markup shows as that markup.

import { h } from './dom.js';
import { links } from './nav.js';
import { download, paths } from './api.js';

// readableTime shows an RFC 3339 time as "2024-01-31 12:00:00 UTC"
// (milliseconds when there are some); anything unparsable as it is.
export function readableTime(v) {
  const d = new Date(v);
  if (typeof v !== 'string' || Number.isNaN(d.getTime())) return String(v);
  const iso = d.toISOString();
  const ms = iso.slice(19, 23) === '.000' ? '' : iso.slice(19, 23);
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${ms} UTC`;
}

// folded shows a structured value as a one-line summary that opens into
// its indented JSON. The summary is out of the tab order: in the grid,
// Space on the cell opens it.
function folded(value, summaryText) {
  return h('details', { class: 'folded' },
    h('summary', { tabindex: '-1' }, summaryText),
    h('pre', null, JSON.stringify(value, null, 2)));
}

function jsonSummary(v) {
  if (Array.isArray(v)) return `[${v.length} item${v.length === 1 ? '' : 's'}]`;
  if (v && typeof v === 'object') {
    const n = Object.keys(v).length;
    return `{${n} key${n === 1 ? '' : 's'}}`;
  }
  return JSON.stringify(v);
}

function fileItem(ctx, recordId, col, file, fileId) {
  const name = file.name || '(unnamed)';
  return h('span', { class: 'file' },
    h('span', { class: 'file-name' }, name),
    h('button', {
      type: 'button',
      class: 'link download',
      tabindex: '-1',
      'aria-label': `Download ${name}`,
      onclick: async (ev) => {
        ev.stopPropagation();
        const btn = ev.currentTarget;
        btn.disabled = true;
        try {
          await download(paths.file(ctx.ws, ctx.db, ctx.branch, ctx.table, recordId, col.name, fileId), file.name);
          btn.dataset.done = '1';
        } catch (e) {
          btn.title = e.message;
          btn.classList.add('failed');
        } finally {
          btn.disabled = false;
        }
      },
    }, '⬇'));
}

// renderValue returns the node that shows value, of column col, in the
// record recordId of the table ctx.table.
export function renderValue(ctx, col, value, recordId) {
  if (value === undefined || value === null) return h('span', { class: 'null' }, '—');
  switch (col.type) {
    case 'link': {
      const id = value && typeof value === 'object' ? value.id : value;
      return h('a', { href: links.record(ctx.ws, ctx.db, ctx.branch, col.link.table, id), tabindex: '-1' }, String(id));
    }
    case 'datetime':
      return h('time', { datetime: value, title: value }, readableTime(value));
    case 'bool':
      return h('span', { class: `bool ${value ? 'yes' : 'no'}` }, value ? 'true' : 'false');
    case 'int':
    case 'float':
      return h('span', { class: 'num' }, String(value));
    case 'multiple':
      return h('span', { class: 'chips' }, (Array.isArray(value) ? value : [value]).map((v) => h('span', { class: 'chip' }, String(v))));
    case 'json': {
      let parsed = value;
      if (typeof value === 'string') {
        try {
          parsed = JSON.parse(value);
        } catch {
          return h('span', null, value);
        }
      }
      return folded(parsed, jsonSummary(parsed));
    }
    case 'object':
      return folded(value, jsonSummary(value));
    case 'vector':
      return folded(value, `vector [${Array.isArray(value) ? value.length : '?'}]`);
    case 'file':
      return fileItem(ctx, recordId, col, value, '');
    case 'file[]':
      return h('span', { class: 'files' }, (Array.isArray(value) ? value : []).map((f) => fileItem(ctx, recordId, col, f, f.id)));
    case 'text':
      return h('span', { class: 'text', title: String(value) }, String(value));
    default:
      return h('span', null, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
}

// tableOf returns the schema of table name in branch details, or null.
export function tableOf(details, name) {
  return (details.schema && details.schema.tables || []).find((t) => t.name === name) || null;
}

// sortable reports whether records can be ordered by a column of this type.
export function sortable(col) {
  return ['string', 'email', 'int', 'float', 'bool', 'datetime', 'link'].includes(col.type);
}
