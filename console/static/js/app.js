// The console's entry point: sign-in, the header with the position, and
// the router that renders the view the URL names.

import { h, errorBox, clear } from './dom.js';
import { call, session, paths, whenKeyRejected } from './api.js';
import { BASE, links, go, onNavigate, takeFlash, flash } from './nav.js';
import { workspacesView, databasesView } from './views/home.js';
import { branchesView } from './views/branches.js';
import { tablesView, branchSearchView } from './views/tables.js';
import { recordsView } from './views/grid.js';
import { recordView, newRecordView } from './views/record.js';
import { schemaView } from './views/schema.js';
import { summaryView } from './views/summary.js';
import { tableSearchView } from './views/search.js';
import { settingsView } from './views/settings.js';

const SEG = '([^/]+)';
const T = `/w/${SEG}/d/${SEG}/b/${SEG}/t/${SEG}`;

// routes: path pattern (after /console), parameter names, view, tab.
const routes = [
  [/^\/?$/, [], workspacesView],
  [new RegExp(`^/w/${SEG}$`), ['ws'], databasesView],
  [new RegExp(`^/w/${SEG}/settings$`), ['ws'], settingsView],
  [new RegExp(`^/w/${SEG}/d/${SEG}$`), ['ws', 'db'], branchesView],
  [new RegExp(`^/w/${SEG}/d/${SEG}/b/${SEG}$`), ['ws', 'db', 'branch'], tablesView],
  [new RegExp(`^/w/${SEG}/d/${SEG}/b/${SEG}/search$`), ['ws', 'db', 'branch'], branchSearchView],
  [new RegExp(`^${T}$`), ['ws', 'db', 'branch', 'table'], recordsView, 'records'],
  [new RegExp(`^${T}/schema$`), ['ws', 'db', 'branch', 'table'], schemaView, 'schema'],
  [new RegExp(`^${T}/summary$`), ['ws', 'db', 'branch', 'table'], summaryView, 'summary'],
  [new RegExp(`^${T}/search$`), ['ws', 'db', 'branch', 'table'], tableSearchView, 'search'],
  [new RegExp(`^${T}/new$`), ['ws', 'db', 'branch', 'table'], newRecordView, 'records'],
  [new RegExp(`^${T}/r/${SEG}$`), ['ws', 'db', 'branch', 'table', 'id'], recordView, 'records'],
];

function match(path) {
  for (const [re, names, view, tab] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    const params = {};
    try {
      names.forEach((n, i) => { params[n] = decodeURIComponent(m[i + 1]); });
    } catch {
      return null;
    }
    return { params, view, tab };
  }
  return null;
}

const main = () => document.getElementById('main');

let renderSeq = 0;
let user = null; // the signed-in user, from GET /user

function signOut(message) {
  session.clear();
  user = null;
  if (message) flash(message);
  render();
}

whenKeyRejected(() => signOut('The API key was rejected (invalid API key): sign in again.'));

function renderAccount() {
  const el = clear(document.getElementById('account'));
  if (!user) return;
  el.append(
    h('span', { class: 'who', title: user.id }, user.email || user.id),
    h('button', { type: 'button', id: 'sign-out', onclick: () => signOut('Signed out.') }, 'Sign out'));
}

// branchSwitcher is a <select> of the database's branches that keeps the
// rest of the position when it changes branch.
async function branchSwitcher(p, tab) {
  const sel = h('select', { id: 'branch-switch', 'aria-label': 'Branch' }, h('option', { value: p.branch }, p.branch));
  try {
    const list = await call('GET', paths.branches(p.ws, p.db));
    clear(sel).append(...(list.branches || []).map((b) =>
      h('option', { value: b.name, selected: b.name === p.branch }, b.name)));
  } catch {
    // The view itself reports a missing database or branch.
  }
  sel.addEventListener('change', () => {
    const br = sel.value;
    if (p.table && tab && tab !== 'records') go(links.tableTab(p.ws, p.db, br, p.table, tab));
    else if (p.table) go(links.table(p.ws, p.db, br, p.table));
    else go(links.branch(p.ws, p.db, br));
  });
  return sel;
}

async function renderCrumbs(p, tab, seq) {
  const items = [h('a', { href: links.home() }, 'Workspaces')];
  if (p.ws) items.push(h('a', { href: links.workspace(p.ws) }, p.ws));
  if (p.db) items.push(h('a', { href: links.database(p.ws, p.db) }, p.db));
  if (p.branch) items.push(h('span', { class: 'branch-crumb' }, h('a', { href: links.branch(p.ws, p.db, p.branch) }, 'branch'), await branchSwitcher(p, tab)));
  if (p.table) items.push(h('a', { href: links.table(p.ws, p.db, p.branch, p.table) }, p.table));
  if (p.id) items.push(h('a', { href: links.record(p.ws, p.db, p.branch, p.table, p.id) }, p.id));
  if (seq !== renderSeq) return;
  const nav = clear(document.getElementById('crumbs'));
  const ol = h('ol');
  items.forEach((it, i) => {
    const li = h('li', null, it);
    if (i === items.length - 1) li.setAttribute('aria-current', 'location');
    ol.append(li);
  });
  nav.append(ol);
}

// tabs are the views of one table.
function tabs(p, current) {
  const tab = (name, label, url) => h('a', {
    href: url, class: 'tab', 'aria-current': name === current ? 'page' : null, dataset: { tab: name },
  }, label);
  return h('nav', { class: 'tabs', 'aria-label': 'Table views' },
    tab('records', 'Records', links.table(p.ws, p.db, p.branch, p.table)),
    tab('schema', 'Schema', links.tableTab(p.ws, p.db, p.branch, p.table, 'schema')),
    tab('summary', 'Summary', links.tableTab(p.ws, p.db, p.branch, p.table, 'summary')),
    tab('search', 'Search', links.tableTab(p.ws, p.db, p.branch, p.table, 'search')));
}

function signInView() {
  const err = errorBox({ id: 'signin-error' });
  const input = h('input', { type: 'password', id: 'api-key', name: 'key', autocomplete: 'off', required: true, spellcheck: 'false' });
  const note = takeFlash();
  const form = h('form', {
    class: 'card signin',
    onsubmit: async (ev) => {
      ev.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      err.show(null);
      try {
        user = await call('GET', '/user', undefined, { key });
      } catch (e) {
        err.show(e);
        return;
      }
      session.set(key);
      input.value = '';
      render();
    },
  },
  h('h1', null, 'Sign in'),
  note ? h('p', { class: 'flash', role: 'status' }, note) : null,
  h('p', null, 'Sign in with an API key. The first start of the server prints one (or set COPPICE_BOOTSTRAP_KEY); owners create more under a workspace\'s settings. The key stays in this tab\'s session storage until you sign out or close the tab.'),
  h('label', { class: 'field' }, h('span', { class: 'label' }, 'API key'), input),
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  err);
  return form;
}

// render shows the view of the current URL.
async function render() {
  const seq = ++renderSeq;
  const m = main();
  m.setAttribute('aria-busy', 'true');
  if (!session.key()) {
    user = null;
    renderAccount();
    clear(document.getElementById('crumbs'));
    document.body.dataset.view = 'signin';
    document.title = 'Sign in · Coppice';
    m.replaceChildren(signInView());
    m.setAttribute('aria-busy', 'false');
    document.getElementById('api-key').focus();
    return;
  }
  if (!user) {
    try {
      user = await call('GET', '/user');
    } catch (e) {
      if (seq !== renderSeq) return;
      if (!session.key()) return; // signed out by the rejected key
      m.replaceChildren(h('p', { class: 'error', role: 'alert' }, e.message));
      m.setAttribute('aria-busy', 'false');
      return;
    }
    if (seq !== renderSeq) return;
  }
  renderAccount();
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/';
  const route = match(path);
  if (!route) {
    clear(document.getElementById('crumbs'));
    m.replaceChildren(h('h1', null, 'Not found'), h('p', null, 'No console page at this address. ', h('a', { href: links.home() }, 'Workspaces')));
    m.setAttribute('aria-busy', 'false');
    return;
  }
  const p = route.params;
  const ctx = {
    ...p,
    query: new URLSearchParams(location.search),
    alive: () => seq === renderSeq,
    user,
  };
  renderCrumbs(p, route.tab, seq);
  const note = takeFlash();
  const parts = [];
  if (note) parts.push(h('p', { class: 'flash', role: 'status' }, note));
  if (p.table) parts.push(tabs(p, route.tab));
  try {
    parts.push(await route.view(ctx));
  } catch (e) {
    parts.push(h('p', { class: 'error', role: 'alert', id: 'view-error' }, e.message));
  }
  if (seq !== renderSeq) return;
  m.replaceChildren(...parts);
  m.setAttribute('aria-busy', 'false');
  document.body.dataset.view = route.view.name;
  document.title = `${[p.table, p.branch && `${p.db}:${p.branch}`, p.db && !p.branch ? p.db : '', p.ws].filter(Boolean).join(' · ') || 'Workspaces'} · Coppice`;
}

// Links inside the console change the view without reloading the page.
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target.closest && ev.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !(url.pathname === BASE || url.pathname.startsWith(`${BASE}/`))) return;
  ev.preventDefault();
  go(url.pathname + url.search);
});

window.addEventListener('popstate', () => render());
onNavigate(render);
render();
