import type { RouteEntry } from './view.js';
import { comingView } from './views/coming.js';
import { sandboxView } from './views/sandbox.js';
import { sandboxesView } from './views/sandboxes.js';

/**
 * The console's pages, first match wins. A new page is one entry here and
 * one file under views/; `nav` entries are the top bar's links.
 */
export const ROUTES: readonly RouteEntry[] = [
  { pattern: '/sandboxes', title: 'Sandboxes', view: sandboxesView, nav: true },
  { pattern: '/sandboxes/:id', title: 'Sandbox', view: sandboxView },
  { pattern: '/sandboxes/:id/timeline', title: 'Timeline', view: comingView('Timeline', 'the rolling snapshots as a strip, with rewind, fork, pin and name') },
  { pattern: '/sandboxes/:id/lineage', title: 'Lineage', view: comingView('Lineage', 'forks as a tree, each node linking to its sandbox or snapshot') },
  { pattern: '/approvals', title: 'Approvals', view: comingView('Approvals', 'calls waiting under per-call policy, approve or deny'), nav: true },
  { pattern: '/admin', title: 'Admin', view: comingView('Admin', 'tenants, limits, usage, keys and nodes (admin keys)'), nav: true },
];

/** Where `#/` and unknown paths go. */
export const HOME = '/sandboxes';
