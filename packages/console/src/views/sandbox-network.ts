import type { GrantInfo, SandboxInfo } from '@forkd/protocol';
import { listGrants, revokeGrant } from '../api/grants.js';
import { button, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import { table } from '../ui/table.js';
import type { ViewContext } from '../view.js';
import { networkForm } from './sandbox-network-form.js';

function rules(title: string, list: readonly string[] | undefined): HTMLElement[] {
  return [h('dt', {}, title), h('dd', {}, list?.length ? list.join(', ') : '—')];
}

function facts(n: SandboxInfo['network']): HTMLElement[] {
  return [h('dt', {}, 'Mode'), h('dd', {}, n?.mode ?? 'none'), ...rules('Allowed out', n?.allowOut), ...rules('Denied out', [...(n?.forcedDenyOut ?? []), ...(n?.denyOut ?? [])])];
}

/** The sandbox's network mode and egress rules, and its live credential grants (revocable). */
export function networkPanel(ctx: ViewContext, s: SandboxInfo): { el: HTMLElement } {
  const notice = new Notice();
  const grants = h('div', {}, h('p', { class: 'muted' }, 'Loading grants…'));
  const revoke = (g: GrantInfo) =>
    g.perCall
      ? h('span', { class: 'muted' }, 'this call only')
      : button('Revoke', () => confirm(`Revoke grant ${g.id}?`) && revokeGrant(ctx.api, s.id, g.id).then(show, (err: unknown) => notice.error(err)), { class: 'danger', 'aria-label': `Revoke ${g.id}` });
  function show(): void {
    listGrants(ctx.api, s.id).then(
      (gs) =>
        replace(
          grants,
          table('Grants', [
            { title: 'Secret', cell: (g) => g.secret },
            { title: 'Hosts', cell: (g) => g.hosts.join(', ') },
            { title: 'Header', cell: (g) => g.header, minor: true },
            { title: 'Expires', cell: (g) => g.expiresAt ?? 'never', minor: true },
            { title: '', cell: revoke },
          ], gs, 'No grants.'),
        ),
      (err: unknown) => notice.error(err),
    );
  }
  show();
  const shown = h('dl', { class: 'facts' }, ...facts(s.network));
  const form = networkForm(ctx, s, notice, (updated) => replace(shown, ...facts(updated.network)));
  return { el: h('section', { class: 'panel', 'aria-labelledby': 'network-title' }, h('h2', { id: 'network-title' }, 'Network'), shown, form, notice.el, h('h3', {}, 'Grants'), grants) };
}
