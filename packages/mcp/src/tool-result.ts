import { toForkdError } from '@forkd/protocol';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A tool's answer: a text for the model and the same facts as structured content for programs. */
export function ok(structured: Record<string, unknown>, text: string = JSON.stringify(structured, null, 2)): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

/**
 * A failed call as a tool error (not a protocol error): the model sees the
 * code and forkd's message (e.g. which policy rule refused it) and can act
 * on them. The API already withheld what tenants must not see; anything
 * else here failed in this client (e.g. the daemon unreachable) and keeps
 * its message under INTERNAL.
 */
export function toolError(err: unknown): CallToolResult {
  const fe = toForkdError(err);
  // No structured content: clients check it against the tool's output schema, which describes success.
  return { isError: true, content: [{ type: 'text', text: `${fe.code}: ${fe.message}` }] };
}

/** Runs a tool body; any failure becomes a tool error. */
export async function guarded(body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await body();
  } catch (err) {
    return toolError(err);
  }
}
