import type { KeyInfo } from '@forkd/protocol';
import { createKey, revokeKey } from '../api/admin.js';
import { formatAge } from '../format.js';
import { button, field, h, replace } from '../ui/dom.js';
import type { Notice } from '../ui/notice.js';
import { table, type Column } from '../ui/table.js';
import type { ViewContext } from '../view.js';

function columns(revoke: (k: KeyInfo) => void): Column<KeyInfo>[] {
  const now = Date.now();
  return [
    { title: 'Key', cell: (k) => h('code', {}, `${k.prefix}…`) },
    { title: 'Tenant', cell: (k) => k.tenant },
    { title: 'Name', cell: (k) => k.name ?? '', minor: true },
    { title: 'Admin', cell: (k) => (k.admin ? 'admin' : '') },
    { title: 'Created', cell: (k) => `${formatAge(k.createdAt, now)} ago`, minor: true },
    { title: 'Last used', cell: (k) => (k.lastUsedAt ? `${formatAge(k.lastUsedAt, now)} ago` : 'never'), minor: true },
    { title: '', cell: (k) => (k.revokedAt ? h('span', { class: 'muted' }, 'revoked') : button('Revoke', () => revoke(k), { class: 'danger', 'aria-label': `Revoke key ${k.prefix}… of ${k.tenant}` })) },
  ];
}

function createForm(ctx: ViewContext, notice: Notice, shown: HTMLElement, done: () => void): HTMLElement {
  const tenant = h('input', { name: 'tenant', required: true, spellcheck: 'false', autocomplete: 'off', placeholder: 'acme' });
  const name = h('input', { name: 'name', autocomplete: 'off', placeholder: 'optional' });
  const admin = h('input', { type: 'checkbox', name: 'admin' });
  const format = h('select', { name: 'format' }, h('option', { value: 'forkd' }, 'forkd'), h('option', { value: 'e2b' }, 'e2b (for e2b SDKs)'));
  const form = h('form', { class: 'filters', 'aria-label': 'Create a key' }, field('Tenant', tenant), field('Key name', name), field('Format', format), h('label', { class: 'check' }, admin, ' Admin key'), h('button', { type: 'submit' }, 'Create key'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    notice.info('Creating a key…');
    createKey(ctx.api, { tenant: tenant.value.trim(), name: name.value.trim() || undefined, admin: admin.checked, format: format.value === 'e2b' ? 'e2b' : 'forkd' }).then(
      (c) => {
        notice.info(`Created a key for ${c.info.tenant}`);
        // Shown once, here only: the server keeps its hash.
        replace(shown, h('p', {}, 'The new key (shown once; copy it now): '), h('output', { class: 'secret', 'aria-label': 'New key' }, c.key));
        done();
      },
      (err: unknown) => notice.error(err),
    );
  });
  return form;
}

/** The keys (every tenant's, for an admin): revoke; create one, shown once. `update` redraws the list only (the form and a new key stay). */
export function keysSection(ctx: ViewContext, notice: Notice, reload: () => void): { el: HTMLElement; update(keys: readonly KeyInfo[]): void } {
  const shown = h('div', { 'aria-live': 'polite' });
  const list = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const revoke = (k: KeyInfo) => {
    if (!confirm(`Revoke key ${k.prefix}… of ${k.tenant}? Calls with it are refused from now on.`)) return;
    revokeKey(ctx.api, k.id).then(() => (notice.info(`Revoked ${k.prefix}…`), reload()), (err: unknown) => notice.error(err));
  };
  const el = h('section', { class: 'panel', 'aria-labelledby': 'keys-title' }, h('h2', { id: 'keys-title' }, 'Keys'), list, h('h3', {}, 'New key'), createForm(ctx, notice, shown, reload), shown);
  return {
    el,
    update(keys) {
      const sorted = [...keys].sort((a, b) => Number(!!a.revokedAt) - Number(!!b.revokedAt) || a.tenant.localeCompare(b.tenant));
      replace(list, table('API keys', columns(revoke), sorted, 'No keys.'));
    },
  };
}
