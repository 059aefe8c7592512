// Console URLs and navigation. The position (workspace, database, branch,
// table, record, view) is always the URL's path, so every screen can be
// linked to and reloaded; the API key never appears in it.

export const BASE = '/console';

const enc = encodeURIComponent;

// href builds a console URL from path segments (each encoded) and an
// optional query object whose empty values are dropped.
function href(segments, query) {
  let url = `${BASE}/${segments.map(enc).join('/')}`;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    }
    const qs = q.toString();
    if (qs) url += `?${qs}`;
  }
  return url;
}

export const links = {
  home: () => `${BASE}/`,
  workspace: (ws) => href(['w', ws]),
  settings: (ws) => href(['w', ws, 'settings']),
  database: (ws, db) => href(['w', ws, 'd', db]),
  branch: (ws, db, br) => href(['w', ws, 'd', db, 'b', br]),
  branchSearch: (ws, db, br, q) => href(['w', ws, 'd', db, 'b', br, 'search'], { q }),
  table: (ws, db, br, t, query) => href(['w', ws, 'd', db, 'b', br, 't', t], query),
  tableTab: (ws, db, br, t, tab, query) => href(['w', ws, 'd', db, 'b', br, 't', t, tab], query),
  record: (ws, db, br, t, id) => href(['w', ws, 'd', db, 'b', br, 't', t, 'r', id]),
  newRecord: (ws, db, br, t) => href(['w', ws, 'd', db, 'b', br, 't', t, 'new']),
};

let renderer = () => {};

// onNavigate sets the function that renders the current URL.
export function onNavigate(fn) {
  renderer = fn;
}

// go shows url: a new history entry, or with replace the current one
// rewritten. With quiet, only the address changes (the view already shows
// what the URL says).
export function go(url, { replace = false, quiet = false } = {}) {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  if (!quiet) renderer();
}

let pending = '';

// flash keeps a message for the next screen shown ("Record deleted").
export function flash(message) {
  pending = message;
}

// takeFlash returns the kept message once.
export function takeFlash() {
  const m = pending;
  pending = '';
  return m;
}
