import type { RouteEntry } from './view.js';
import { adminView } from './views/admin.js';
import { approvalsView } from './views/approvals.js';
import { lineageView } from './views/lineage.js';
import { sandboxView } from './views/sandbox.js';
import { sandboxesView } from './views/sandboxes.js';
import { timelineView } from './views/timeline.js';

/**
 * The console's pages, first match wins. A new page is one entry here and
 * one file under views/; `nav` entries are the top bar's links
 * (`adminOnly` ones shown to admin keys only).
 */
export const ROUTES: readonly RouteEntry[] = [
  { pattern: '/sandboxes', title: 'Sandboxes', view: sandboxesView, nav: true },
  { pattern: '/sandboxes/:id', title: 'Sandbox', view: sandboxView },
  { pattern: '/sandboxes/:id/timeline', title: 'Timeline', view: timelineView },
  { pattern: '/sandboxes/:id/lineage', title: 'Lineage', view: lineageView },
  { pattern: '/approvals', title: 'Approvals', view: approvalsView, nav: true },
  { pattern: '/admin', title: 'Admin', view: adminView, nav: true, adminOnly: true },
];

/** Where `#/` and unknown paths go. */
export const HOME = '/sandboxes';
