import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';

/** What forkd says of an approval-gated call while it waits. */
export interface ApprovalWait {
  /** The policy rule that asks for approval. */
  rule?: string;
  message?: string;
}

/**
 * The exec option through which the SDK reports that an approval-gated exec
 * waits (its NDJSON stream's "waiting for approval" event, from the policy
 * work). Passed already: it takes effect as soon as the SDK calls it.
 */
export interface ApprovalWaitHook {
  onWaitingForApproval?: (info: ApprovalWait) => void;
}

/** Tells the MCP client, during a tool call, what the call is waiting for. */
export interface ToolNotifier {
  waiting(info: ApprovalWait): Promise<void>;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * Notifications tied to the tool call's own request (over HTTP they go on
 * its response stream): a progress notification when the client asked for
 * progress, and a log message in any case, so a client that shows either
 * tells its user the call waits for an approval.
 */
export function toolNotifier(extra: Extra): ToolNotifier {
  return {
    async waiting(info) {
      const message = `waiting for approval${info.rule ? ` (rule ${info.rule})` : ''}${info.message ? `: ${info.message}` : ''}`;
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
