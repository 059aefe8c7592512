// Workspaces and the databases of a workspace.

import { h, errorBox, field, select } from '../dom.js';
import { call, paths } from '../api.js';
import { links, go, flash } from '../nav.js';
import { readableTime } from '../values.js';

// workspacesView lists the caller's workspaces with their role.
export async function workspacesView() {
  const { workspaces = [] } = await call('GET', paths.workspaces());
  return h('section', null,
    h('h1', null, 'Workspaces'),
    workspaces.length === 0 ? h('p', null, 'This key reaches no workspace.') : null,
    h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'workspaces' },
      h('thead', null, h('tr', null, h('th', null, 'Workspace'), h('th', null, 'Id'), h('th', null, 'Your role'), h('th', null, ''))),
      h('tbody', null, workspaces.map((w) => h('tr', null,
        h('td', null, h('a', { href: links.workspace(w.id) }, w.name)),
        h('td', null, h('code', null, w.id)),
        h('td', null, w.role),
        h('td', null, h('a', { href: links.settings(w.id) }, 'Settings'))))))));
}

// databasesView lists a workspace's databases and creates new ones.
export async function databasesView(ctx) {
  const [{ databases = [] }, { regions = [] }] = await Promise.all([
    call('GET', paths.dbs(ctx.ws)),
    call('GET', paths.regions(ctx.ws)),
  ]);
  const err = errorBox({ id: 'create-db-error' });
  const name = h('input', { id: 'new-db-name', required: true, pattern: '[a-zA-Z0-9_\\-~]+', autocomplete: 'off' });
  const region = select({ id: 'new-db-region' }, regions.map((r) => [r.id, `${r.name} (${r.id})`]));
  const form = h('form', {
    class: 'inline-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      err.show(null);
      try {
        await call('PUT', paths.db(ctx.ws, name.value.trim()), { region: region.value });
      } catch (e) {
        err.show(e);
        return;
      }
      flash(`Database ${name.value.trim()} created.`);
      go(links.database(ctx.ws, name.value.trim()));
    },
  }, field('Name', name), field('Region', region), h('button', { type: 'submit' }, 'Create database'), err);
  return h('section', null,
    h('div', { class: 'heading' },
      h('h1', null, 'Databases'),
      h('a', { href: links.settings(ctx.ws), class: 'button' }, 'Workspace settings')),
    databases.length === 0 ? h('p', null, 'No database yet.') : h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'databases' },
      h('thead', null, h('tr', null, h('th', null, 'Database'), h('th', null, 'Region'), h('th', null, 'Created'))),
      h('tbody', null, databases.map((d) => h('tr', null,
        h('td', null, h('a', { href: links.database(ctx.ws, d.name) }, d.name)),
        h('td', null, d.region),
        h('td', null, readableTime(d.createdAt))))))),
    h('h2', null, 'New database'),
    form);
}
