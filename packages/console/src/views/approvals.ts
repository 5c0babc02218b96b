import type { ApprovalInfo } from '@forkd/protocol';
import { decideApproval, listApprovals } from '../api/approvals.js';
import { formatAge, formatClock } from '../format.js';
import { toHash } from '../router.js';
import { button, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import { poll } from '../ui/poll.js';
import type { View, ViewContext } from '../view.js';

/** How often the queue is asked for (there is no event stream of approvals); only while the tab is visible. */
const POLL_MS = 1500;

/** What the call would run with: resolved program, working directory, user, and the variables it sets. */
function context(a: ApprovalInfo): HTMLElement | undefined {
  const c = a.context;
  if (!c) return undefined;
  const rows: Array<[string, string]> = [];
  if (c.program) rows.push(['Program', c.program]);
  rows.push(['Directory', c.cwd ?? '~ (the user\'s home)'], ['User', c.user ?? 'root']);
  const env = Object.entries(c.env);
  return h(
    'div',
    {},
    h('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    env.length ? h('details', { open: true }, h('summary', {}, `Environment (${env.length})`), h('pre', { class: 'env' }, env.map(([k, v]) => `${k}=${v}`).join('\n'))) : h('p', { class: 'muted' }, 'Sets no environment variables.'),
  );
}

function card(ctx: ViewContext, a: ApprovalInfo, decide: (a: ApprovalInfo, approve: boolean) => void): HTMLElement {
  const now = Date.now();
  return h(
    'article',
    { class: 'panel approval', 'aria-labelledby': `ap-${a.id}`, 'data-approval': a.id },
    h('h2', { id: `ap-${a.id}` }, `${a.kind} in `, h('a', { href: toHash(`/sandboxes/${a.sandbox}`) }, a.sandbox), h('small', { class: 'muted' }, ` · ${a.tenant} · waiting ${formatAge(a.createdAt, now)}, until ${formatClock(a.expiresAt, now)}`)),
    h('pre', { class: 'command' }, h('code', {}, a.command)),
    h('p', {}, h('span', { class: 'muted' }, 'Rule: '), h('code', {}, a.rule)),
    context(a),
    h(
      'div',
      { class: 'actions' },
      button('Approve', () => decide(a, true), { 'aria-label': `Approve: ${a.command}` }),
      button('Deny', () => decide(a, false), { class: 'danger', 'aria-label': `Deny: ${a.command}` }),
    ),
  );
}

/**
 * The approvals queue: calls held by a `requireApproval` rule, with what
 * they would run and why they wait, newest last. Polled while the tab is
 * visible; redrawn only when the queue changes, so focus stays put.
 */
export const approvalsView: View = (ctx) => {
  const notice = new Notice();
  const list = h('div', { 'aria-busy': 'true', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  let shown = '';
  let gone = false;
  const decide = (a: ApprovalInfo, approve: boolean) => {
    notice.info(`${approve ? 'Approving' : 'Denying'} ${a.command}…`);
    decideApproval(ctx.api, a.id, approve).then(
      () => (notice.info(`${approve ? 'Approved' : 'Denied'}: ${a.command}`), void refresh()),
      (err: unknown) => (notice.error(err), void refresh()),
    );
  };
  const refresh = async () => {
    try {
      const all = await listApprovals(ctx.api);
      const key = all.map((a) => a.id).join(',');
      if (gone || (key === shown && list.getAttribute('aria-busy') === 'false')) return;
      shown = key;
      replace(list, ...(all.length ? all.map((a) => card(ctx, a, decide)) : [h('p', { class: 'muted empty' }, 'Nothing is waiting for approval.')]));
    } catch (err) {
      if (!gone) notice.error(err);
    } finally {
      list.setAttribute('aria-busy', 'false');
    }
  };
  const stop = poll(refresh, POLL_MS);
  const el = h(
    'section',
    { class: 'page' },
    h('h1', {}, 'Approvals'),
    h('p', { class: 'muted' }, 'Calls held by a policy\'s requireApproval rule. Approved, the call runs; denied, it ends with PERMISSION_DENIED. Unanswered, it is refused when it expires.'),
    notice.el,
    list,
  );
  return { el, dispose: () => ((gone = true), stop()) };
};
