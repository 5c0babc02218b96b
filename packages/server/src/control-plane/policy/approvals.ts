import { randomBytes } from 'node:crypto';
import { ForkdError, type ApprovalInfo, type ExecContext } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import { notifyApprovalWebhook } from './approval-webhook.js';
import type { ApprovalRecords } from '../../store/approval-records.js';

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

/** How often a replica asks the store whether another replica decided one of its waiting calls. */
const POLL_MS = 200;

/**
 * Calls waiting for an approver. The waiting itself is in this process (a
 * restart forgets the call, and its caller's stream ends with it: nothing
 * ran); with a store (the control store: every replica's), each call is
 * also a row there, so an approver's list and decision go through any
 * replica: the replica the call waits on learns a decision made elsewhere
 * within POLL_MS. An approver sees and decides only its own tenant's
 * (admin keys: all).
 */
export class Approvals {
  readonly #pending = new Map<string, Entry>();
  readonly #webhook: string | undefined;
  readonly #logger: Logger | undefined;
  readonly #store: ApprovalRecords | undefined;
  #poller: NodeJS.Timeout | undefined;

  constructor(opts: { webhook?: string | undefined; logger?: Logger | undefined; store?: ApprovalRecords | undefined } = {}) {
    this.#webhook = opts.webhook;
    this.#logger = opts.logger;
    this.#store = opts.store;
  }

  /**
   * Registers the call (in the store first, so an approver anywhere finds
   * it), tells `onWaiting` (the stream's first event) and the webhook, and
   * resolves with the approver's answer, or `timeout`, or `cancelled` when
   * `signal` aborts (the caller went away).
   */
  wait(call: PendingCall, onWaiting: (a: ApprovalInfo) => void | Promise<void>, signal?: AbortSignal): Promise<ApprovalOutcome> {
    let held = 0;
    for (const e of this.#pending.values()) if (e.info.tenant === call.tenant) held++;
    if (held >= MAX_PENDING_PER_TENANT) throw new ForkdError('RESOURCE_EXHAUSTED', `too many calls waiting for approval (${MAX_PENDING_PER_TENANT})`, { limit: MAX_PENDING_PER_TENANT });
    const info = approvalInfo(call);
    return new Promise<ApprovalOutcome>((resolve, reject) => {
      const done = (o: ApprovalOutcome) => {
        if (!this.#pending.delete(info.id)) return;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        void this.#store?.dropApproval(info.id).catch(() => {});
        resolve(o);
      };
      const onAbort = () => done('cancelled');
      const timer = setTimeout(() => done('timeout'), call.timeoutSeconds * 1000);
      timer.unref();
      this.#pending.set(info.id, { info, settle: done });
      if (signal?.aborted) return done('cancelled');
      signal?.addEventListener('abort', onAbort, { once: true });
      const announce = () => {
        this.#poll();
        if (this.#webhook) notifyApprovalWebhook(this.#webhook, info, this.#logger);
        void Promise.resolve(onWaiting(info)).catch(() => {});
      };
      if (!this.#store) return announce();
      this.#store.putApproval(info).then(announce, (err: unknown) => {
        this.#pending.delete(info.id);
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /** Pending calls, oldest first: one tenant's, or every tenant's (undefined); every replica's with a store. */
  async list(tenant: string | undefined): Promise<ApprovalInfo[]> {
    if (this.#store) return this.#store.pendingApprovals(tenant, new Date().toISOString());
    return [...this.#pending.values()].map((e) => e.info).filter((i) => tenant === undefined || i.tenant === tenant);
  }

  /** Approves or denies a pending call, once, through whichever replica it waits on; another tenant's answers NOT_FOUND like an unknown id. */
  async decide(id: string, approve: boolean, tenant: string | undefined): Promise<ApprovalInfo> {
    const decision = approve ? 'approved' : 'denied';
    const local = this.#pending.get(id);
    const info = this.#store
      ? await this.#store.decideApproval(id, decision, tenant, new Date().toISOString())
      : local && (tenant === undefined || local.info.tenant === tenant) ? local.info : undefined;
    if (!info) throw new ForkdError('NOT_FOUND', `approval ${id} not found (unknown, decided, or timed out)`);
    this.#pending.get(id)?.settle(decision);
    return info;
  }

  /** While calls wait here and a store is shared, asks it every POLL_MS for decisions made through other replicas. */
  #poll(): void {
    if (!this.#store || this.#poller) return;
    this.#poller = setInterval(() => {
      const ids = [...this.#pending.keys()];
      if (ids.length === 0) {
        clearInterval(this.#poller);
        this.#poller = undefined;
        return;
      }
      this.#store!.approvalDecisions(ids).then(
        (got) => {
          for (const [id, d] of got) this.#pending.get(id)?.settle(d);
        },
        (err: unknown) => this.#logger?.warn('approvals: the store did not answer', { error: String(err) }),
      );
    }, POLL_MS);
    this.#poller.unref();
  }
}

function approvalInfo(call: PendingCall): ApprovalInfo {
  const now = Date.now();
  return {
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
}
