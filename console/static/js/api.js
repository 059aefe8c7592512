// The client of the public API. The key lives in the tab's session
// storage and travels only in the Authorization header.

const STORE = 'coppice.console.key';

export const session = {
  key: () => sessionStorage.getItem(STORE),
  set: (key) => sessionStorage.setItem(STORE, key),
  clear: () => sessionStorage.removeItem(STORE),
};

// APIError is a non-2xx answer: status and the server's message.
export class APIError extends Error {
  constructor(status, message, id) {
    super(message);
    this.status = status;
    this.requestId = id;
  }
}

let onInvalidKey = () => {};

// whenKeyRejected sets what happens when the server answers that the key
// is invalid (revoked, deleted, or never valid).
export function whenKeyRejected(fn) {
  onInvalidKey = fn;
}

// call sends one request and returns the decoded JSON answer ({} for an
// empty body); a failure throws APIError with the server's message. With
// raw, a successful response is returned as it is (file downloads). A
// request that got no answer at all (the browser aborts the requests in
// flight when the machine's network changes) is sent once more when
// sending it twice changes nothing: a GET, or a read the caller marks
// safe (a query sent as POST).
export async function call(method, path, body, { raw = false, key = session.key(), safe = method === 'GET' } = {}) {
  const headers = { Authorization: `Bearer ${key || ''}` };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  for (let tries = safe ? 2 : 1; ; tries--) {
    try {
      res = await fetch(path, init);
      break;
    } catch (e) {
      if (tries > 1) continue;
      throw new APIError(0, `the server cannot be reached (${e.message})`);
    }
  }
  if (raw && res.ok) return res;
  const text = res.status === 204 ? '' : await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const message = (data && typeof data.message === 'string') ? data.message : `HTTP ${res.status}`;
    if (res.status === 401 && message === 'invalid API key' && key === session.key()) onInvalidKey();
    throw new APIError(res.status, message, data && data.id);
  }
  return data ?? {};
}

const enc = encodeURIComponent;

// Paths of the API: the control plane, and the data plane in its
// /ws/{workspace} prefix form, which needs no special host name.
export const paths = {
  workspaces: () => '/workspaces',
  workspace: (ws) => `/workspaces/${enc(ws)}`,
  dbs: (ws) => `/workspaces/${enc(ws)}/dbs`,
  db: (ws, db) => `/workspaces/${enc(ws)}/dbs/${enc(db)}`,
  regions: (ws) => `/workspaces/${enc(ws)}/regions`,
  members: (ws) => `/workspaces/${enc(ws)}/members`,
  member: (ws, user) => `/workspaces/${enc(ws)}/members/${enc(user)}`,
  invites: (ws) => `/workspaces/${enc(ws)}/invites`,
  invite: (ws, id) => `/workspaces/${enc(ws)}/invites/${enc(id)}`,
  keys: () => '/user/keys',
  key: (name) => `/user/keys/${enc(name)}`,
  branches: (ws, db) => `/ws/${enc(ws)}/dbs/${enc(db)}`,
  gitBranches: (ws, db) => `/ws/${enc(ws)}/dbs/${enc(db)}/gitBranches`,
  branch: (ws, db, br) => `/ws/${enc(ws)}/db/${enc(db)}:${enc(br)}`,
  table: (ws, db, br, t) => `${paths.branch(ws, db, br)}/tables/${enc(t)}`,
  record: (ws, db, br, t, id) => `${paths.table(ws, db, br, t)}/data/${enc(id)}`,
  file: (ws, db, br, t, id, col, fileId) =>
    `${paths.record(ws, db, br, t, id)}/column/${enc(col)}/file${fileId ? `/${enc(fileId)}` : ''}`,
};

// download fetches a file with the key and hands it to the browser as a
// download named name.
export async function download(path, name) {
  const res = await call('GET', path, undefined, { raw: true });
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name || 'file';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
