import type { SandboxInfo, SnapshotInfo } from '@forkd/protocol';
import { deleteSnapshot, forkSnapshot, pinSnapshot, rewindSandbox } from '../api/snapshots.js';
import { formatBytes, formatClock, formatMs } from '../format.js';
import { toHash } from '../router.js';
import { parseForkCount } from '../timeline-model.js';
import { append, button, field, h } from '../ui/dom.js';
import type { Notice } from '../ui/notice.js';
import type { ViewContext } from '../view.js';

export interface ActionDeps {
  ctx: ViewContext;
  sandboxId: string;
  notice: Notice;
  /** Reloads the timeline (after a change), showing `select` if given. */
  reload(select?: string): void;
}

function facts(s: SnapshotInfo): HTMLElement {
  const rows: Array<[string, string]> = [
    ['Snapshot', s.id],
    ['Taken', `${formatClock(s.createdAt, Date.now())} (${s.createdAt})`],
    ['Why', s.reason],
    ['Name', s.name ?? '–'],
    ['Memory images', formatBytes(s.sizeBytes)],
    ['Frozen for', formatMs(s.frozenMs)],
    ['Pinned', s.pinned ? 'yes (never thinned)' : 'no'],
  ];
  if (s.parentId) rows.push(['After', s.parentId]);
  return h('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** Runs an API call with the notice saying what happens; resolves with its answer, or undefined when it failed (the notice says why). */
async function run<T>(notice: Notice, what: string, p: () => Promise<T>): Promise<T | undefined> {
  notice.info(`${what}…`);
  try {
    return await p();
  } catch (err) {
    notice.error(err);
    return undefined;
  }
}

function forkLinks(made: readonly SandboxInfo[], sandboxId: string): HTMLElement {
  const p = h('p', {}, `Forked into `);
  made.forEach((s, i) => append(p, i ? ', ' : '', h('a', { href: toHash(`/sandboxes/${s.id}`) }, s.id)));
  append(p, '. ', h('a', { href: toHash(`/sandboxes/${sandboxId}/lineage`) }, 'See the lineage'));
  return p;
}

function forkForm(d: ActionDeps, s: SnapshotInfo, out: HTMLElement): HTMLFormElement {
  const count = h('input', { name: 'count', type: 'number', min: 1, value: '1', inputmode: 'numeric', class: 'narrow' });
  const form = h('form', { class: 'inline-form', 'aria-label': 'Fork this snapshot' }, field('Forks', count), h('button', { type: 'submit' }, 'Fork'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const n = parseForkCount(count.value);
    if (!n.ok) return d.notice.error({ code: 'INVALID_ARGUMENT', message: n.error });
    void run(d.notice, `Forking ${s.id} ×${n.count}`, () => forkSnapshot(d.ctx.api, s.id, n.count)).then((made) => {
      if (!made) return;
      d.notice.info(`Forked ${s.id} into ${made.length} sandbox${made.length === 1 ? '' : 'es'}`);
      out.replaceChildren(forkLinks(made, d.sandboxId));
    });
  });
  return form;
}

/** The selected snapshot's facts and what can be done with it: rewind, fork, pin or unpin, delete. */
export function snapshotActions(d: ActionDeps, s: SnapshotInfo): HTMLElement {
  const out = h('div', { 'aria-live': 'polite' });
  const rewind = () => {
    if (!confirm(`Rewind ${d.sandboxId} to ${s.name ?? s.id}? Its processes and files go back to that moment; the state it leaves is snapshotted first.`)) return;
    void run(d.notice, `Rewinding to ${s.id}`, () => rewindSandbox(d.ctx.api, d.sandboxId, s.id)).then((r) => {
      if (!r) return;
      d.notice.info(`Rewound ${d.sandboxId} to ${s.name ?? s.id}; the state it left is the newest snapshot`);
      d.reload(s.id);
    });
  };
  const pin = () =>
    void run(d.notice, s.pinned ? 'Unpinning' : 'Pinning', () => pinSnapshot(d.ctx.api, s.id, !s.pinned)).then((r) => {
      if (r) (d.notice.info(`${r.pinned ? 'Pinned' : 'Unpinned'} ${s.id}`), d.reload(s.id));
    });
  const remove = () => {
    if (!confirm(`Delete snapshot ${s.name ?? s.id}? Its memory images are removed.`)) return;
    void run(d.notice, `Deleting ${s.id}`, () => deleteSnapshot(d.ctx.api, s.id).then(() => true)).then((r) => {
      if (r) (d.notice.info(`Deleted ${s.id}`), d.reload());
    });
  };
  const buttons = h(
    'div',
    { class: 'actions' },
    button('Rewind', rewind, { 'aria-label': `Rewind to ${s.id}` }),
    button(s.pinned ? 'Unpin' : 'Pin', pin, { class: 'quiet' }),
    button('Delete', remove, { class: 'danger', 'aria-label': `Delete snapshot ${s.id}` }),
  );
  return h('div', { class: 'snapshot-detail' }, h('h3', {}, s.name ?? s.id), facts(s), buttons, forkForm(d, s, out), out);
}
