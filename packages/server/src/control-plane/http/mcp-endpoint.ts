import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { ForkdError } from '@forkd/protocol';
import { presentedKey } from '../auth/api-keys.js';
import type { AppEnv } from './app-env.js';
import { jsonBody } from './json-body.js';

/** Who calls `/mcp`, as the API's own authentication found them. */
export interface McpCaller {
  /** The caller's own key: the MCP server's every tool call is an API call made with it. */
  apiKey: string;
  /** This daemon's API, on the address the request came in on. */
  apiUrl: string;
}

/**
 * The MCP server `forkd serve` mounts at `/mcp` (streamable HTTP, from
 * @forkd/mcp, which the server does not depend on: the CLI hands it in).
 * It is a client of this daemon's own API, so policy, approvals, quotas and
 * the audit log apply to its tool calls with no second code path.
 */
export interface McpEndpoint {
  handle(req: Request, body: unknown, caller: McpCaller): Promise<Response>;
}

/**
 * `http(s)://host:port` of the local end of the request's connection: the
 * daemon itself, as the client reached it (HTTPS when it serves TLS: its
 * certificate must then name the address it listens on, FORKD_HOST).
 */
function localApiUrl(c: Context<AppEnv>): string {
  const socket = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket;
  if (!socket?.localAddress || !socket.localPort) throw new ForkdError('NOT_IMPLEMENTED', 'the MCP endpoint runs only in the Node server');
  const addr = socket.localAddress.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
  const scheme = (socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  return `${scheme}://${addr.includes(':') ? `[${addr}]` : addr}:${socket.localPort}`;
}

/** The `/mcp` handler, behind the API's authentication and audit middleware (app.ts). */
export function mcpHandler(endpoint: McpEndpoint) {
  return async (c: Context<AppEnv>): Promise<Response> => {
    const apiKey = presentedKey((n) => c.req.header(n), new URLSearchParams());
    // The middleware authenticated this very key; without one it never gets here.
    if (!apiKey) throw new ForkdError('UNAUTHENTICATED', 'missing API key');
    const body = c.req.method === 'POST' ? await jsonBody(c) : undefined;
    return endpoint.handle(c.req.raw, body, { apiKey, apiUrl: localApiUrl(c) });
  };
}
