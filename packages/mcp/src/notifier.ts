import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';

/** What the SDK reports of an approval-gated exec while it waits (the policy work's `WaitingForApproval`). */
export interface ApprovalWait {
  approvalId?: string;
  /** The policy rule that asks for approval. */
  rule?: string;
  /** When the wait ends in a refusal if no one decides. */
  expiresAt?: string;
}

/**
 * The exec option through which the SDK reports that an approval-gated exec
 * waits (the NDJSON stream's "waiting" event): `onWaiting`, as the policy
 * work names it. Passed now, it takes effect once the SDK calls it.
 */
export interface ApprovalWaitHook {
  onWaiting?: (info: ApprovalWait) => void;
}

/** Tells the MCP client, during a tool call, what the call is waiting for. */
export interface ToolNotifier {
  waiting(info: ApprovalWait): Promise<void>;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export function waitingMessage(info: ApprovalWait): string {
  return `waiting for approval${info.rule ? ` (policy rule ${info.rule})` : ''}${info.approvalId ? `, approval ${info.approvalId}` : ''}${info.expiresAt ? `, refused if not decided by ${info.expiresAt}` : ''}`;
}

/**
 * Notifications tied to the tool call's own request (over HTTP they go on
 * its response stream): a progress notification when the client asked for
 * progress, and a log message in any case, so a client that shows either
 * tells its user the call waits for an approval.
 */
export function toolNotifier(extra: Extra): ToolNotifier {
  return {
    async waiting(info) {
      const message = waitingMessage(info);
      const token = extra._meta?.progressToken;
      try {
        if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 0, message } });
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'notice', logger: 'forkd', data: message } });
      } catch {
        /* the client went away: the call itself ends with the exec */
      }
    },
  };
}
