import type { SnapshotInfo } from '@forkd/protocol';
import { getSandbox } from '../api/sandboxes.js';
import { listSnapshots, takeSnapshot } from '../api/snapshots.js';
import { toHash } from '../router.js';
import { selectedSnapshot, stripItems } from '../timeline-model.js';
import { button, field, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
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
  let gone = false;

  const show = (sel: SnapshotInfo | undefined) => {
    wanted = sel?.id ?? null;
    replace(strip, timelineStrip(stripItems(snaps), sel?.id, (s) => (show(s), (strip.querySelector(`[data-snapshot="${s.id}"]`) as HTMLElement | null)?.focus())));
    replace(detail, sel ? snapshotActions({ ctx, sandboxId: id, notice, reload }, sel) : '');
  };
  const reload = (select?: string) => {
    if (select) wanted = select;
    Promise.all([listSnapshots(ctx.api, id), getSandbox(ctx.api, id)]).then(
      ([list, sbx]) => {
        if (gone) return;
        snaps = list;
        state.textContent = ` · ${sbx.state}`;
        strip.setAttribute('aria-busy', 'false');
        show(selectedSnapshot(snaps, wanted));
      },
      (err: unknown) => gone || (notice.error(err), replace(strip)),
    );
  };
  reload();
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
  return { el, dispose: () => void (gone = true) };
};
