import { h, replace } from './dom.js';

/** What a person is told of a failure: forkd's code and message (and the request id to quote to an operator). */
export function describeError(err: unknown): string {
  const e = err as { code?: string; message?: string; requestId?: string } | null;
  const msg = e?.message ?? String(err);
  const code = e?.code ? `${e.code}: ` : '';
  return `${code}${msg}${e?.requestId ? ` (request ${e.requestId})` : ''}`;
}

/** A live region for a page's errors and results; screen readers announce what is put in it. */
export class Notice {
  readonly el = h('div', { class: 'notice', role: 'status', 'aria-live': 'polite' });

  error(err: unknown): void {
    this.el.className = 'notice notice-error';
    this.el.setAttribute('role', 'alert');
    replace(this.el, describeError(err));
  }

  info(text: string): void {
    this.el.className = 'notice notice-info';
    this.el.setAttribute('role', 'status');
    replace(this.el, text);
  }

  clear(): void {
    this.el.className = 'notice';
    replace(this.el);
  }
}
