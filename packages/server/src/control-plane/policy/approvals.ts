import { randomBytes } from 'node:crypto';
import { ForkdError, type ApprovalInfo, type ExecContext } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import { notifyApprovalWebhook } from './approval-webhook.js';

export type ApprovalOutcome = 'approved' | 'denied' | 'timeout' | 'cancelled';

export interface PendingCall {
  sandbox: string;
  tenant: string;
  kind: 'exec' | 'grant';
  command: string;
  /** An exec's env, cwd, user and resolved program: approvers judge the whole call, not its argv alone. */
  context?: ExecContext | undefined;
  rule: string;
  timeoutSeconds: number;
}

/** Waiting calls one tenant may hold at once: a flood of gated calls must not grow the daemon's memory without end. */
const MAX_PENDING_PER_TENANT = 256;

interface Entry {
  info: ApprovalInfo;
  settle(o: ApprovalOutcome): void;
}

/**
 * Calls waiting for an approver, in the control plane's memory: a restart
 * forgets them, and their callers' streams end with it (nothing ran). An
 * approver sees and decides only its own tenant's (admin keys: all).
 */
export class Approvals {
  readonly #pending = new Map<string, Entry>();
  readonly #webhook: string | undefined;
  readonly #logger: Logger | undefined;

  constructor(opts: { webhook?: string | undefined; logger?: Logger | undefined } = {}) {
    this.#webhook = opts.webhook;
    this.#logger = opts.logger;
  }

  /**
   * Registers the call, tells `onWaiting` (the stream's first event) and the
   * webhook, and resolves with the approver's answer, or `timeout`, or
   * `cancelled` when `signal` aborts (the caller went away).
   */
  wait(call: PendingCall, onWaiting: (a: ApprovalInfo) => void | Promise<void>, signal?: AbortSignal): Promise<ApprovalOutcome> {
    let held = 0;
    for (const e of this.#pending.values()) if (e.info.tenant === call.tenant) held++;
    if (held >= MAX_PENDING_PER_TENANT) throw new ForkdError('RESOURCE_EXHAUSTED', `too many calls waiting for approval (${MAX_PENDING_PER_TENANT})`, { limit: MAX_PENDING_PER_TENANT });
    const now = Date.now();
    const info: ApprovalInfo = {
      id: `apr-${randomBytes(8).toString('hex')}`,
      sandbox: call.sandbox,
      tenant: call.tenant,
      kind: call.kind,
      command: call.command.slice(0, 4096),
      rule: call.rule,
      ...(call.context ? { context: call.context } : {}),
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + call.timeoutSeconds * 1000).toISOString(),
    };
    return new Promise<ApprovalOutcome>((resolve) => {
      const done = (o: ApprovalOutcome) => {
        if (!this.#pending.delete(info.id)) return;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(o);
      };
      const onAbort = () => done('cancelled');
      const timer = setTimeout(() => done('timeout'), call.timeoutSeconds * 1000);
      timer.unref();
      this.#pending.set(info.id, { info, settle: done });
      if (signal?.aborted) return done('cancelled');
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.#webhook) notifyApprovalWebhook(this.#webhook, info, this.#logger);
      void Promise.resolve(onWaiting(info)).catch(() => {});
    });
  }

  /** Pending calls, oldest first: one tenant's, or every tenant's (undefined). */
  list(tenant: string | undefined): ApprovalInfo[] {
    return [...this.#pending.values()].map((e) => e.info).filter((i) => tenant === undefined || i.tenant === tenant);
  }

  /** Approves or denies a pending call; another tenant's answers NOT_FOUND like an unknown id. */
  decide(id: string, approve: boolean, tenant: string | undefined): ApprovalInfo {
    const e = this.#pending.get(id);
    if (!e || (tenant !== undefined && e.info.tenant !== tenant)) throw new ForkdError('NOT_FOUND', `approval ${id} not found (unknown, decided, or timed out)`);
    e.settle(approve ? 'approved' : 'denied');
    return e.info;
  }
}
