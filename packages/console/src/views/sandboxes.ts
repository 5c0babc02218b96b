import type { SandboxInfo } from '@forkd/protocol';
import { deleteSandbox, listSandboxes, pauseSandbox, resumeSandbox } from '../api/sandboxes.js';
import { formatAge, formatCpus, formatMb, parsePairs } from '../format.js';
import { toHash } from '../router.js';
import { button, field, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import { poll } from '../ui/poll.js';
import { table, type Column } from '../ui/table.js';
import { SANDBOX_STATES } from '../vendor/sandbox-state.js';
import type { View, ViewContext } from '../view.js';
import { createForm } from './sandbox-create.js';

const REFRESH_MS = 5000;

/** The query's metadata filter (`k=v, k2=v2`) as the API takes it (`k=v&k2=v2`, URL-encoded). */
export function metadataQuery(text: string): string | undefined {
  const p = parsePairs(text);
  if (!p.ok || !Object.keys(p.value).length) return undefined;
  return new URLSearchParams(p.value).toString();
}

/** The actions the API offers in a sandbox's state. */
function actions(ctx: ViewContext, s: SandboxInfo, done: (p: Promise<unknown>, doing: string, did: string) => void): HTMLElement {
  const b: HTMLElement[] = [];
  const label = (verb: string) => ({ 'aria-label': `${verb} ${s.id}` });
  if (s.state === 'running') b.push(button('Pause', () => done(pauseSandbox(ctx.api, s.id), `Pausing ${s.id}…`, `Paused ${s.id}`), label('Pause')));
  if (s.state === 'paused') b.push(button('Resume', () => done(resumeSandbox(ctx.api, s.id), `Resuming ${s.id}…`, `Resumed ${s.id}`), label('Resume')));
  b.push(
    button('Delete', () => confirm(`Delete ${s.id} with its processes and files?`) && done(deleteSandbox(ctx.api, s.id), `Deleting ${s.id}…`, `Deleted ${s.id}`), { ...label('Delete'), class: 'danger' }),
  );
  return h('div', { class: 'actions' }, ...b);
}

function columns(ctx: ViewContext, done: (p: Promise<unknown>, doing: string, did: string) => void): Column<SandboxInfo>[] {
  const now = Date.now();
  return [
    { title: 'Sandbox', cell: (s) => h('a', { href: toHash(`/sandboxes/${s.id}`) }, s.id) },
    { title: 'State', cell: (s) => h('span', { class: `state state-${s.state}` }, s.state) },
    { title: 'Template', cell: (s) => s.template },
    { title: 'Age', cell: (s) => h('time', { datetime: s.createdAt, title: s.createdAt }, formatAge(s.createdAt, now)) },
    { title: 'CPU', cell: (s) => formatCpus(s.limits.cpus), minor: true },
    { title: 'Memory', cell: (s) => formatMb(s.limits.memoryMb), minor: true },
    { title: 'Disk', cell: (s) => formatMb(s.limits.diskMb), minor: true },
    { title: 'Metadata', cell: (s) => Object.entries(s.metadata).map(([k, v]) => `${k}=${v}`).join(', '), minor: true },
    { title: 'Actions', cell: (s) => actions(ctx, s, done) },
  ];
}

function filters(ctx: ViewContext): HTMLFormElement {
  const state = h('select', { name: 'state' }, h('option', { value: '' }, 'any'), ...SANDBOX_STATES.map((s) => h('option', { value: s, selected: ctx.query.get('state') === s }, s)));
  const meta = h('input', { name: 'metadata', value: ctx.query.get('metadata') ?? '', placeholder: 'owner=alice, run=7' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter sandboxes' }, field('State', state), field('Metadata', meta), h('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate('/sandboxes', { state: state.value, metadata: meta.value.trim() });
  });
  return form;
}

/** The sandboxes page: the tenant's sandboxes (filtered), create, pause, resume, delete. */
export const sandboxesView: View = (ctx) => {
  const notice = new Notice();
  const list = h('div', { class: 'list', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  let stopped = false;
  let last = '';
  const refresh = async () => {
    try {
      const rows = await listSandboxes(ctx.api, { state: ctx.query.get('state') ?? undefined, metadata: metadataQuery(ctx.query.get('metadata') ?? '') }, ctx.signal);
      // Redrawn only when something changed: a redraw would take the keyboard focus from a row's button.
      const seen = JSON.stringify(rows);
      if (stopped || seen === last) return;
      last = seen;
      replace(list, table('Sandboxes', columns(ctx, done), rows, 'No sandboxes here yet.'));
    } catch (err) {
      if (!ctx.signal.aborted) notice.error(err);
    } finally {
      list.setAttribute('aria-busy', 'false');
    }
  };
  const done = (p: Promise<unknown>, doing: string, did: string) => {
    notice.info(doing);
    p.then(() => notice.info(did), (err: unknown) => notice.error(err)).finally(() => void refresh());
  };
  const stop = poll(refresh, REFRESH_MS);
  const create = createForm(ctx, (s) => {
    notice.info(`Created ${s.id}`);
    void refresh();
  }, notice);
  const el = h('section', { class: 'page' }, h('h1', {}, 'Sandboxes'), notice.el, filters(ctx), list, create);
  return { el, dispose: () => ((stopped = true), stop()) };
};
