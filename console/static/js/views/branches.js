// The branches of a database and its git-branch mapping.

import { h, errorBox, field, select, confirmButton } from '../dom.js';
import { call, paths } from '../api.js';
import { links, go, flash } from '../nav.js';
import { readableTime } from '../values.js';

// branchesView lists, creates, deletes and opens branches, and shows and
// edits the git-branch mapping.
export async function branchesView(ctx) {
  const [{ branches = [] }, { mapping = [] }] = await Promise.all([
    call('GET', paths.branches(ctx.ws, ctx.db)),
    call('GET', paths.gitBranches(ctx.ws, ctx.db)),
  ]);
  const reload = (msg) => { if (msg) flash(msg); go(links.database(ctx.ws, ctx.db), { replace: true }); };
  const names = branches.map((b) => b.name);

  const rowErr = errorBox({ id: 'branch-error' });
  const list = h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'branches' },
    h('thead', null, h('tr', null, h('th', null, 'Branch'), h('th', null, 'Created'), h('th', null, ''))),
    h('tbody', null, branches.map((b) => h('tr', { dataset: { branch: b.name } },
      h('td', null, h('a', { href: links.branch(ctx.ws, ctx.db, b.name) }, b.name)),
      h('td', null, readableTime(b.createdAt)),
      h('td', { class: 'actions' }, confirmButton('Delete', `Delete ${b.name}?`, async () => {
        rowErr.show(null);
        try {
          await call('DELETE', paths.branch(ctx.ws, ctx.db, b.name));
        } catch (e) {
          rowErr.show(e);
          return;
        }
        reload(`Branch ${b.name} deleted.`);
      }, { dataset: { action: 'delete-branch' } })))))));

  const createErr = errorBox({ id: 'create-branch-error' });
  const name = h('input', { id: 'new-branch-name', required: true, autocomplete: 'off' });
  const from = select({ id: 'new-branch-from' }, names, names.includes('main') ? 'main' : names[0]);
  const create = h('form', {
    class: 'inline-form',
    id: 'create-branch',
    onsubmit: async (ev) => {
      ev.preventDefault();
      createErr.show(null);
      const n = name.value.trim();
      try {
        await call('PUT', paths.branch(ctx.ws, ctx.db, n), { from: from.value });
      } catch (e) {
        createErr.show(e);
        return;
      }
      flash(`Branch ${n} created from ${from.value}.`);
      go(links.branch(ctx.ws, ctx.db, n));
    },
  }, field('Name', name), field('From', from), h('button', { type: 'submit' }, 'Create branch'), createErr);

  const gitErr = errorBox({ id: 'git-error' });
  const gitName = h('input', { id: 'git-branch', required: true, autocomplete: 'off' });
  const gitTarget = select({ id: 'git-target' }, names);
  const gitForm = h('form', {
    class: 'inline-form',
    id: 'add-git-mapping',
    onsubmit: async (ev) => {
      ev.preventDefault();
      gitErr.show(null);
      try {
        await call('POST', paths.gitBranches(ctx.ws, ctx.db), { gitBranch: gitName.value.trim(), xataBranch: gitTarget.value });
      } catch (e) {
        gitErr.show(e);
        return;
      }
      reload(`Git branch ${gitName.value.trim()} maps to ${gitTarget.value}.`);
    },
  }, field('Git branch', gitName), field('Branch', gitTarget), h('button', { type: 'submit' }, 'Map'), gitErr);

  const mappings = mapping.length === 0 ? h('p', { id: 'git-mappings' }, 'No git branch is mapped.') :
    h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'git-mappings' },
      h('thead', null, h('tr', null, h('th', null, 'Git branch'), h('th', null, 'Branch'), h('th', null, ''))),
      h('tbody', null, mapping.map((m) => h('tr', null,
        h('td', null, h('code', null, m.gitBranch)),
        h('td', null, h('a', { href: links.branch(ctx.ws, ctx.db, m.xataBranch) }, m.xataBranch)),
        h('td', { class: 'actions' }, confirmButton('Remove', 'Remove?', async () => {
          gitErr.show(null);
          try {
            await call('DELETE', `${paths.gitBranches(ctx.ws, ctx.db)}?gitBranch=${encodeURIComponent(m.gitBranch)}`);
          } catch (e) {
            gitErr.show(e);
            return;
          }
          reload(`Git branch ${m.gitBranch} unmapped.`);
        })))))));

  return h('section', null,
    h('h1', null, `Branches of ${ctx.db}`),
    h('p', { class: 'hint' }, 'A new branch is a copy-on-write copy of its source, schema and records, made in constant time.'),
    list, rowErr,
    h('h2', null, 'New branch'), create,
    h('h2', null, 'Git branch mapping'), mappings, gitForm);
}
