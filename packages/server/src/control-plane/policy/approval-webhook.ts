import type { ApprovalInfo } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';

/** How long the operator's endpoint gets: the call waits for its approver, never for the webhook. */
const WEBHOOK_TIMEOUT_MS = 5000;

/** Tells the operator's endpoint that a call waits (fire and forget: failures are logged, never raised). */
export function notifyApprovalWebhook(url: string, approval: ApprovalInfo, logger?: Logger): void {
  void fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ event: 'approval.waiting', approval }),
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
  }).then(
    async (res) => {
      await res.body?.cancel();
      if (!res.ok) logger?.warn('approval webhook answered an error', { status: res.status, approval: approval.id });
    },
    (err: unknown) => logger?.warn('approval webhook failed', { error: err instanceof Error ? err.message : String(err), approval: approval.id }),
  );
}
