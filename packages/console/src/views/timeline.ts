import type { SnapshotInfo } from '@forkd/protocol';
import { getSandbox } from '../api/sandboxes.js';
import { listSnapshots, takeSnapshot } from '../api/snapshots.js';
import { toHash } from '../router.js';
import { selectedSnapshot, stripItems } from '../timeline-model.js';
import { button, field, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import { poll } from '../ui/poll.js';
import type { View, ViewContext } from '../view.js';
import { snapshotActions } from './timeline-actions.js';
import { timelineStrip } from './timeline-strip.js';

function snapshotForm(ctx: ViewContext, id: string, notice: Notice, reload: (select?: string) => void): HTMLFormElement {
  const name = h('input', { name: 'name', placeholder: 'optional, e.g. before-upgrade', spellcheck: 'false', autocomplete: 'off' });
  const submit = h('button', { type: 'submit' }, 'Take snapshot');
  const form = h('form', { class: 'filters', 'aria-label': 'Take a snapshot' }, field('Snapshot name', name, 'a named snapshot is pinned'), submit);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    notice.info('Taking a snapshot…');
    takeSnapshot(ctx.api, id, name.value.trim() || undefined)
      .then(
        (s) => {
          notice.info(`Took snapshot ${s.name ?? s.id} (${s.id})`);
          name.value = '';
          reload(s.id);
        },
        (err: unknown) => notice.error(err),
      )
      .finally(() => (submit.disabled = false));
  });
  return form;
}

/** How often the strip asks for new snapshots (the rolling ones come every few minutes); only while the tab is visible. */
const POLL_MS = 10_000;

/** What of a snapshot the page shows that can change: a redraw only when it did (so focus and a typed fork count stay). */
const sigOf = (s: SnapshotInfo | undefined) => (s ? `${s.id}:${s.pinned}` : '');

/**
 * A sandbox's timeline: its snapshots as a strip (the rolling ones, and
 * those taken by hand, by pauses, rewinds and forks), a form to take one,
 * and the selected snapshot's actions. A terminal open on the sandbox
 * elsewhere says so when it is rewound (the stream's own `rewound` notice).
 */
export const timelineView: View = (ctx) => {
  const id = ctx.params.id!;
  const notice = new Notice();
  const strip = h('div', { class: 'strip-wrap', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  const detail = h('div', {});
  const state = h('span', { class: 'muted' });
  let wanted = ctx.query.get('snapshot');
  let snaps: SnapshotInfo[] = [];
  let shown = { strip: '', detail: '' };
  let gone = false;

  const show = (sel: SnapshotInfo | undefined, force: boolean) => {
    wanted = sel?.id ?? null;
    const next = { strip: `${snaps.map(sigOf).join(',')}>${wanted}`, detail: sigOf(sel) };
    if (force || next.strip !== shown.strip) {
      const focused = (document.activeElement as HTMLElement | null)?.dataset.snapshot;
      replace(strip, timelineStrip(stripItems(snaps), sel?.id, (s) => (show(s, true), focusItem(s.id))));
      if (focused) focusItem(focused);
    }
    if (force || next.detail !== shown.detail) replace(detail, sel ? snapshotActions({ ctx, sandboxId: id, notice, reload }, sel) : '');
    shown = next;
  };
  const focusItem = (snap: string) => (strip.querySelector(`[data-snapshot="${snap}"]`) as HTMLElement | null)?.focus();
  const load = (force: boolean) =>
    Promise.all([listSnapshots(ctx.api, id), getSandbox(ctx.api, id)]).then(
      ([list, sbx]) => {
        if (gone) return;
        snaps = list;
        state.textContent = ` · ${sbx.state}`;
        strip.setAttribute('aria-busy', 'false');
        show(selectedSnapshot(snaps, wanted), force);
      },
      (err: unknown) => gone || (notice.error(err), replace(strip), (shown = { strip: '', detail: '' })),
    );
  function reload(select?: string): void {
    if (select) wanted = select;
    void load(true);
  }
  const stop = poll(() => load(false), POLL_MS);
  const el = h(
    'section',
    { class: 'page' },
    h('p', {}, h('a', { href: toHash(`/sandboxes/${id}`) }, `← ${id}`)),
    h('h1', {}, 'Timeline'),
    h('p', { class: 'muted' }, h('a', { href: toHash(`/sandboxes/${id}`) }, id), state, ' · ', h('a', { href: toHash(`/sandboxes/${id}/lineage`) }, 'Lineage')),
    notice.el,
    snapshotForm(ctx, id, notice, reload),
    h('div', { class: 'bar' }, h('h2', {}, 'Snapshots'), button('Refresh', () => reload(), { class: 'quiet' })),
    strip,
    detail,
  );
  return { el, dispose: () => ((gone = true), stop()) };
};
