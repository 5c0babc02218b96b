import type { SandboxInfo } from '@forkd/protocol';
import { deleteSandbox, getSandbox, pauseSandbox, resumeSandbox } from '../api/sandboxes.js';
import { formatAge, formatCpus, formatMb } from '../format.js';
import { toHash } from '../router.js';
import { button, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import type { View, ViewContext } from '../view.js';
import { auditPanel } from './sandbox-audit.js';
import { filesPanel } from './sandbox-files.js';
import { networkPanel } from './sandbox-network.js';
import { terminalPanel } from './sandbox-terminal.js';
import { usagePanel } from './sandbox-usage.js';

/** Name–value pairs as a description list. */
function facts(s: SandboxInfo): HTMLElement {
  const rows: Array<[string, string]> = [
    ['State', s.state],
    ['Template', s.template],
    ['Age', formatAge(s.createdAt, Date.now())],
    ['CPU', formatCpus(s.limits.cpus)],
    ['Memory', formatMb(s.limits.memoryMb)],
    ['Disk', formatMb(s.limits.diskMb)],
    ['Network', s.network?.mode ?? 'none'],
  ];
  if (s.forkedFrom) rows.push(['Forked from', s.forkedFrom]);
  for (const [k, v] of Object.entries(s.metadata)) rows.push([`metadata ${k}`, v]);
  return h('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function header(ctx: ViewContext, s: SandboxInfo, notice: Notice, reload: () => void): HTMLElement {
  const act = (p: Promise<unknown>, what: string) => {
    notice.info(`${what}…`);
    p.then(() => (notice.info(`${what}: done`), reload()), (err: unknown) => notice.error(err));
  };
  const b: HTMLElement[] = [];
  if (s.state === 'running') b.push(button('Pause', () => act(pauseSandbox(ctx.api, s.id), 'Pausing')));
  if (s.state === 'paused') b.push(button('Resume', () => act(resumeSandbox(ctx.api, s.id), 'Resuming')));
  b.push(
    button('Delete', () => confirm(`Delete ${s.id} with its processes and files?`) && deleteSandbox(ctx.api, s.id).then(() => ctx.navigate('/sandboxes'), (err: unknown) => notice.error(err)), { class: 'danger' }),
  );
  const links = h('nav', { class: 'sub', 'aria-label': 'This sandbox' }, h('a', { href: toHash(`/sandboxes/${s.id}/timeline`) }, 'Timeline'), h('a', { href: toHash(`/sandboxes/${s.id}/lineage`) }, 'Lineage'));
  return h('div', { class: 'sandbox-head' }, h('div', { class: 'actions' }, ...b), links, facts(s));
}

/** The panels under the facts, made once the sandbox is known (each stops its own timers and sockets). */
function panels(ctx: ViewContext, s: SandboxInfo): { el: HTMLElement; dispose(): void } {
  const terminal = terminalPanel(ctx, s);
  const files = filesPanel(ctx, s.id);
  const usage = usagePanel(ctx, s.id, s.limits.cpus);
  const el = h('div', { class: 'panels' }, terminal.el, files.el, usage.el, networkPanel(ctx, s).el, auditPanel(ctx, s.id).el);
  return { el, dispose: () => (terminal.dispose(), usage.dispose()) };
}

/** A sandbox's page: its facts and actions, then its panels. */
export const sandboxView: View = (ctx) => {
  const id = ctx.params.id!;
  const notice = new Notice();
  const head = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const body = h('div', {});
  let shown: { dispose(): void } | undefined;
  let gone = false;
  const load = () =>
    getSandbox(ctx.api, id).then(
      (s) => {
        if (gone) return;
        replace(head, header(ctx, s, notice, load));
        if (shown) return;
        const p = panels(ctx, s);
        shown = p;
        replace(body, p.el);
      },
      (err: unknown) => notice.error(err),
    );
  void load();
  const el = h('section', { class: 'page' }, h('p', {}, h('a', { href: toHash('/sandboxes') }, '← Sandboxes')), h('h1', {}, id), notice.el, head, body);
  return { el, dispose: () => ((gone = true), shown?.dispose()) };
};
