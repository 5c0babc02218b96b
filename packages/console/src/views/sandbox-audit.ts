import type { AuditRecord } from '@forkd/protocol';
import { sandboxAudit } from '../api/audit.js';
import { button, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import { table } from '../ui/table.js';
import type { ViewContext } from '../view.js';

/** The sandbox's audit trail, newest first (what the API recorded of every call on it). */
export function auditPanel(ctx: ViewContext, id: string): { el: HTMLElement } {
  const notice = new Notice();
  const list = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const show = () =>
    sandboxAudit(ctx.api, id).then(
      (rs) =>
        replace(
          list,
          table<AuditRecord>('Audit trail', [
            { title: 'When', cell: (r) => h('time', { datetime: r.at }, new Date(r.at).toLocaleTimeString()) },
            { title: 'Operation', cell: (r) => r.operation },
            { title: 'Target', cell: (r) => r.target ?? '', minor: true },
            { title: 'Result', cell: (r) => h('span', { class: r.code === 'OK' ? 'state-running' : 'state-failed' }, r.code) },
            { title: 'ms', cell: (r) => String(r.durationMs), minor: true },
          ], rs, 'Nothing recorded yet.'),
        ),
      (err: unknown) => notice.error(err),
    );
  void show();
  return { el: h('section', { class: 'panel', 'aria-labelledby': 'audit-title' }, h('h2', { id: 'audit-title' }, 'Audit trail'), button('Refresh', () => void show(), { class: 'quiet' }), notice.el, list) };
}
