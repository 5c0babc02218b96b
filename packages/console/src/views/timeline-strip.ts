import type { SnapshotInfo } from '@forkd/protocol';
import { formatBytes, formatClock, formatMs } from '../format.js';
import type { StripItem } from '../timeline-model.js';
import { h } from '../ui/dom.js';

/**
 * The timeline as a strip, oldest on the left: one button per snapshot (its
 * time, name or reason, size and freeze), a bar as tall as its memory images
 * against the largest, a pin mark. The pressed one is the one shown below;
 * arrows move along it.
 */
export function timelineStrip(items: readonly StripItem[], selected: string | undefined, onSelect: (s: SnapshotInfo) => void): HTMLElement {
  const now = Date.now();
  const cards = items.map(({ snap, sizeFraction, label }) => {
    const bar = h('span', { class: 'strip-bar', 'aria-hidden': 'true' }, h('span', { style: `height:${Math.round(sizeFraction * 100)}%` }));
    const b = h(
      'button',
      {
        type: 'button',
        class: `strip-item${snap.pinned ? ' pinned' : ''} reason-${snap.reason}`,
        'aria-pressed': String(snap.id === selected),
        'data-snapshot': snap.id,
        title: snap.id,
        onclick: () => onSelect(snap),
      },
      bar,
      h('span', { class: 'strip-text' },
        h('time', { datetime: snap.createdAt }, formatClock(snap.createdAt, now)),
        h('strong', {}, label),
        h('small', {}, `${formatBytes(snap.sizeBytes)} · frozen ${formatMs(snap.frozenMs)}`),
        snap.pinned ? h('small', { class: 'pin' }, 'pinned') : undefined),
    );
    return h('li', {}, b);
  });
  if (!cards.length) return h('p', { class: 'muted empty' }, 'No snapshots yet: take one, or wait for the rolling timeline.');
  const list = h('ol', { class: 'strip', 'aria-label': 'Snapshots, oldest first' }, ...cards);
  list.addEventListener('keydown', (ev) => arrows(list, ev));
  return list;
}

/** Left and right arrows (Home, End) move along the strip, as in a toolbar; Tab still leaves it. */
function arrows(list: HTMLElement, ev: KeyboardEvent): void {
  const all = [...list.querySelectorAll<HTMLButtonElement>('button.strip-item')];
  const at = all.indexOf(document.activeElement as HTMLButtonElement);
  const to = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: all.length - 1 }[ev.key];
  if (at < 0 || to === undefined || !all[to]) return;
  ev.preventDefault();
  all[to].focus();
}
