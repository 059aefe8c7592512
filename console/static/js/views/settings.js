// Workspace settings: the workspace's name, members and their roles,
// invites, and the signed-in user's API keys.

import { h, errorBox, field, select, confirmButton, clear } from '../dom.js';
import { call, paths } from '../api.js';
import { readableTime } from '../values.js';

const ROLES = ['owner', 'maintainer'];

// core is the 6-character part of a workspace id that identifies it.
const core = (id) => id.slice(id.lastIndexOf('-') + 1);

// section builds a block whose body redraws itself with its load function.
function section(title, id, load) {
  const body = h('div', { id });
  const err = errorBox({ id: `${id}-error` });
  const el = h('section', { class: 'card' }, h('h2', null, title), err, body);
  const refresh = async () => {
    try {
      clear(body).append(await load(refresh, err));
    } catch (e) {
      err.show(e);
    }
  };
  return { el, refresh };
}

// settingsView shows the settings of one workspace. Owners may change
// everything; a maintainer sees members and manages only their own keys.
export async function settingsView(ctx) {
  const [ws, { workspaces = [] }] = await Promise.all([
    call('GET', paths.workspace(ctx.ws)),
    call('GET', paths.workspaces()),
  ]);
  const mine = workspaces.find((w) => core(w.id) === core(ctx.ws));
  const owner = !!mine && mine.role === 'owner';

  // The workspace's name.
  const nameErr = errorBox({ id: 'ws-name-error' });
  const name = h('input', { id: 'ws-name', value: ws.name, required: true, disabled: !owner, autocomplete: 'off' });
  const nameForm = h('form', {
    class: 'inline-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      nameErr.show(null);
      try {
        await call('PUT', paths.workspace(ctx.ws), { name: name.value.trim() });
        nameErr.show(null);
        saved.hidden = false;
      } catch (e) {
        nameErr.show(e);
      }
    },
  }, field('Name', name), owner ? h('button', { type: 'submit' }, 'Rename') : null, nameErr);
  const saved = h('span', { class: 'hint', role: 'status', id: 'ws-saved', hidden: true }, 'Saved.');
  nameForm.append(saved);

  // Members, with their roles.
  const members = section('Members', 'members-box', async (refresh, err) => {
    const { members: list = [] } = await call('GET', paths.members(ctx.ws));
    return h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'members' },
      h('thead', null, h('tr', null, h('th', null, 'Name'), h('th', null, 'Email'), h('th', null, 'Role'), h('th', null, ''))),
      h('tbody', null, list.map((m) => {
        const role = select({ 'aria-label': `Role of ${m.email}`, disabled: !owner, dataset: { user: m.userId } }, ROLES, m.role);
        role.addEventListener('change', async () => {
          err.show(null);
          try {
            await call('PUT', paths.member(ctx.ws, m.userId), { role: role.value });
          } catch (e) {
            err.show(e);
          }
          refresh();
        });
        return h('tr', { dataset: { user: m.userId, email: m.email } },
          h('td', null, m.fullname || '', m.userId === ctx.user.id ? h('span', { class: 'badge' }, 'you') : null),
          h('td', null, m.email),
          h('td', null, role),
          h('td', { class: 'actions' }, owner || m.userId === ctx.user.id ? confirmButton(m.userId === ctx.user.id ? 'Leave' : 'Remove', 'Confirm', async () => {
            err.show(null);
            try {
              await call('DELETE', paths.member(ctx.ws, m.userId));
            } catch (e) {
              err.show(e);
              return;
            }
            refresh();
          }, { dataset: { action: 'remove-member' } }) : null));
      }))));
  });

  // Pending invites and new ones. With no mailer, the invite key is shown
  // once for the owner to hand over.
  const invites = section('Invites', 'invites-box', async (refresh, err) => {
    const { invites: list = [] } = await call('GET', paths.members(ctx.ws));
    const email = h('input', { id: 'invite-email', type: 'text', inputmode: 'email', required: true, autocomplete: 'off' });
    const role = select({ id: 'invite-role' }, ROLES, 'maintainer');
    const made = h('div', { id: 'invite-created', class: 'secret', hidden: true });
    const form = h('form', {
      class: 'inline-form',
      id: 'invite-form',
      onsubmit: async (ev) => {
        ev.preventDefault();
        err.show(null);
        let inv;
        try {
          inv = await call('POST', paths.invites(ctx.ws), { email: email.value.trim(), role: role.value });
        } catch (e) {
          err.show(e);
          return;
        }
        await refresh();
        invitesKey(inv);
      },
    }, field('Email', email), field('Role', role), h('button', { type: 'submit', class: 'primary' }, 'Invite'));
    const rows = list.map((inv) => {
      const r = select({ 'aria-label': `Role of the invite of ${inv.email}`, dataset: { invite: inv.inviteId } }, ROLES, inv.role);
      r.addEventListener('change', async () => {
        err.show(null);
        try {
          await call('PATCH', paths.invite(ctx.ws, inv.inviteId), { role: r.value });
        } catch (e) {
          err.show(e);
        }
        refresh();
      });
      return h('tr', { dataset: { invite: inv.inviteId, email: inv.email } },
        h('td', null, inv.email), h('td', null, r), h('td', null, readableTime(inv.expires)),
        h('td', { class: 'actions' }, confirmButton('Delete', 'Confirm', async () => {
          err.show(null);
          try {
            await call('DELETE', paths.invite(ctx.ws, inv.inviteId));
          } catch (e) {
            err.show(e);
            return;
          }
          refresh();
        }, { dataset: { action: 'delete-invite' } })));
    });
    return h('div', null,
      list.length === 0 ? h('p', { id: 'invites-empty' }, 'No pending invite.') : h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'invites' },
        h('thead', null, h('tr', null, h('th', null, 'Email'), h('th', null, 'Role'), h('th', null, 'Expires'), h('th', null, ''))),
        h('tbody', null, rows))),
      form, made);
  });
  // invitesKey shows the key of a new invite, after the list redrew.
  const invitesKey = (inv) => {
    const box = document.getElementById('invite-created');
    if (!box) return;
    box.hidden = false;
    box.append(
      h('p', null, `Invite for ${inv.email} created. Hand this invite key over; it is shown only now. The invited user accepts with POST /workspaces/${ctx.ws}/invites/{key}/accept.`),
      secretLine(inv.inviteKey, 'invite-key'));
  };

  // The user's API keys: create (scoped to this workspace or not) and
  // revoke. A new key's secret is shown once.
  const keys = section('Your API keys', 'keys-box', async (refresh, err) => {
    const { keys: list = [] } = await call('GET', paths.keys());
    const keyName = h('input', { id: 'key-name', required: true, pattern: '[a-zA-Z0-9_\\-~]+', autocomplete: 'off' });
    const scoped = h('input', { id: 'key-scoped', type: 'checkbox', checked: true });
    const form = h('form', {
      class: 'inline-form',
      id: 'key-form',
      onsubmit: async (ev) => {
        ev.preventDefault();
        err.show(null);
        let created;
        try {
          created = await call('POST', paths.key(keyName.value.trim()), scoped.checked ? { workspaceID: ctx.ws } : undefined);
        } catch (e) {
          err.show(e);
          return;
        }
        await refresh();
        const box = document.getElementById('key-created');
        box.hidden = false;
        box.append(
          h('p', null, `Key ${created.name} created${scoped.checked ? ` for workspace ${ctx.ws}` : ''}. Copy its secret now: it is shown only this once.`),
          secretLine(created.key, 'new-key-secret'));
      },
    }, field('Name', keyName), h('label', { class: 'check' }, scoped, ' only this workspace'),
    h('button', { type: 'submit', class: 'primary' }, 'Create key'));
    return h('div', null,
      h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'keys' },
        h('thead', null, h('tr', null, h('th', null, 'Name'), h('th', null, 'Created'), h('th', null, ''))),
        h('tbody', null, list.map((k) => h('tr', { dataset: { key: k.name } },
          h('td', null, k.name), h('td', null, readableTime(k.createdAt)),
          h('td', { class: 'actions' }, confirmButton('Revoke', `Revoke ${k.name}?`, async () => {
            err.show(null);
            try {
              await call('DELETE', paths.key(k.name));
            } catch (e) {
              err.show(e);
              return;
            }
            refresh();
          }, { dataset: { action: 'revoke-key' } }))))))),
      form,
      h('div', { id: 'key-created', class: 'secret', hidden: true }));
  });

  await Promise.all([members.refresh(), invites.refresh(), keys.refresh()]);
  return h('div', { class: 'settings' },
    h('h1', null, `Settings of ${ws.name}`),
    owner ? null : h('p', { class: 'hint' }, 'You are a maintainer here: only owners change the workspace, its members and invites.'),
    h('section', { class: 'card' }, h('h2', null, 'Workspace'), h('p', null, 'Id ', h('code', null, ws.id), ` · ${ws.memberCount} member${ws.memberCount === 1 ? '' : 's'} · plan ${ws.plan}`), nameForm),
    members.el,
    owner ? invites.el : null,
    keys.el);
}

// secretLine shows a secret with a button that copies it.
function secretLine(secret, id) {
  const code = h('code', { id, class: 'secret-value' }, secret);
  const copy = h('button', {
    type: 'button',
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(secret);
        copy.textContent = 'Copied';
      } catch {
        const range = document.createRange();
        range.selectNodeContents(code);
        const sel = getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        copy.textContent = 'Selected: copy it';
      }
    },
  }, 'Copy');
  return h('p', null, code, ' ', copy);
}
