import type { SandboxInfo } from '@forkd/protocol';
import type { ApiClient } from '../api.js';
import { getSandbox } from '../api/sandboxes.js';
import { forkTree, getSnapshot, type ForkTree } from '../api/snapshots.js';
import { edgePath, layoutTree, type PlacedEdge, type PlacedNode } from '../lineage-layout.js';
import { toHash } from '../router.js';
import { h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import { svg } from '../ui/svg.js';
import type { View } from '../view.js';

/** A cell of the drawing, and the box of a sandbox in it. */
const CW = 200;
const CH = 110;
const BW = 176;
const BH = 54;
/** Forks of forks are followed up at most this far to find the tree's root. */
const MAX_UP = 32;

/**
 * The first sandbox of the lineage: the API's tree starts at the sandbox it
 * is asked about, so the console walks up (fork → its snapshot → that
 * snapshot's sandbox) while the ancestors still exist.
 */
async function rootOf(api: ApiClient, id: string): Promise<string> {
  let cur = await getSandbox(api, id);
  for (let i = 0; i < MAX_UP && cur.forkedFrom; i++) {
    try {
      cur = await getSandbox(api, (await getSnapshot(api, cur.forkedFrom)).sandboxId);
    } catch {
      break; // the snapshot or its sandbox is gone: the tree starts here
    }
  }
  return cur.id;
}

function nodeEl(n: PlacedNode<SandboxInfo>, current: string): SVGElement {
  const s = n.sandbox;
  const x = n.x * CW + (CW - BW) / 2;
  const y = n.y * CH;
  const cls = `node state-${s.state}${s.id === current ? ' current' : ''}`;
  return svg(
    'a',
    { href: toHash(`/sandboxes/${s.id}`), class: cls, 'aria-label': `${s.id}, ${s.state}${s.id === current ? ' (this sandbox)' : ''}` },
    svg('rect', { x, y, width: BW, height: BH, rx: 6 }),
    svg('text', { x: x + 10, y: y + 22, class: 'id' }, s.id),
    svg('text', { x: x + 10, y: y + 42, class: 'sub' }, `${s.state} · ${s.template}`),
  );
}

function edgeEl(e: PlacedEdge<SandboxInfo>): SVGElement {
  const snap = e.to.sandbox.forkedFrom;
  const path = svg('path', { d: edgePath(e.from, e.to, CW, CH, BH), class: 'edge' });
  if (!snap) return path;
  const x = e.to.x * CW + CW / 2;
  const y = e.to.y * CH - 12;
  const label = svg(
    'a',
    { href: toHash(`/sandboxes/${e.from.sandbox.id}/timeline`, { snapshot: snap }), class: 'edge-label', 'aria-label': `snapshot ${snap} of ${e.from.sandbox.id}` },
    svg('text', { x, y, 'text-anchor': 'middle' }, snap),
  );
  return svg('g', {}, path, label);
}

/** The tree as an SVG graph: a box per sandbox (a link to it), a line per fork labelled with its snapshot (a link into the parent's timeline). */
export function lineageGraph(tree: ForkTree, current: string): HTMLElement {
  const l = layoutTree(tree);
  const width = Math.max(1, l.width) * CW;
  const height = l.height * CH - (CH - BH) + 2;
  const g = svg('svg', { viewBox: `0 -1 ${width} ${height}`, width, height, role: 'group', 'aria-label': `Lineage: ${l.nodes.length} sandbox${l.nodes.length === 1 ? '' : 'es'}`, class: 'lineage' });
  g.append(...l.edges.map(edgeEl), ...l.nodes.map((n) => nodeEl(n, current)));
  return h('div', { class: 'lineage-wrap' }, g);
}

/** A sandbox's lineage: the whole fork tree it belongs to, this sandbox marked. */
export const lineageView: View = (ctx) => {
  const id = ctx.params.id!;
  const notice = new Notice();
  const body = h('div', { 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  let gone = false;
  rootOf(ctx.api, id)
    .then((root) => forkTree(ctx.api, root))
    .then(
      (tree) => gone || replace(body, lineageGraph(tree, id)),
      (err: unknown) => gone || (notice.error(err), replace(body)),
    )
    .finally(() => body.setAttribute('aria-busy', 'false'));
  const el = h(
    'section',
    { class: 'page' },
    h('p', {}, h('a', { href: toHash(`/sandboxes/${id}`) }, `← ${id}`)),
    h('h1', {}, 'Lineage'),
    h('p', { class: 'muted' }, 'Each box is a sandbox; each line a fork, labelled with the snapshot it came from. ', h('a', { href: toHash(`/sandboxes/${id}/timeline`) }, 'Timeline')),
    notice.el,
    body,
  );
  return { el, dispose: () => void (gone = true) };
};
