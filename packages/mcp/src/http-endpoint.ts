import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { ForkdClient } from '@forkd/sdk';
import { createForkdMcpServer } from './mcp-server.js';

/** Who calls `/mcp`, as the daemon's API authenticated them. */
export interface McpCaller {
  /** The caller's own API key: every tool call is an API call with it. */
  apiKey: string;
  /** The daemon's own API, reached on the address the request came in on. */
  apiUrl: string;
}

/** The streamable-HTTP MCP endpoint, in the shape `forkd serve` mounts at `/mcp` (its McpEndpoint seam). */
export interface McpHttpEndpoint {
  /** `body`: the request's JSON body, read (bounded) by the daemon; the request's own body is not read again. */
  handle(req: Request, body: unknown, caller: McpCaller): Promise<Response>;
}

const notAllowed = () =>
  new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'method not allowed: this MCP endpoint is stateless (POST only)' }, id: null }), {
    status: 405,
    headers: { 'content-type': 'application/json', allow: 'POST' },
  });

/**
 * Stateless streamable HTTP: each POST gets its own MCP server over its own
 * SDK client with the caller's key, so no session outlives its request or
 * carries one caller's rights into another's. The answer streams (SSE), so
 * notifications of a waiting call reach the client before the result; the
 * server is closed when that stream ends. No standalone GET stream (405):
 * nothing here pushes unrequested messages.
 */
export function mcpHttpEndpoint(version: string): McpHttpEndpoint {
  return {
    async handle(req, body, caller) {
      if (req.method !== 'POST') return notAllowed();
      const forkd = new ForkdClient({ url: caller.apiUrl, apiKey: caller.apiKey });
      const server = createForkdMcpServer(forkd, version);
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await server.connect(transport);
      let res: Response;
      try {
        res = await transport.handleRequest(req, { parsedBody: body });
      } catch (err) {
        await server.close();
        throw err;
      }
      if (!res.body) {
        await server.close();
        return res;
      }
      const close = () => void server.close().catch(() => undefined);
      // The server lives as long as its answer's stream: closed at its end, or when a client that went away cancels it.
      const reader = res.body.getReader();
      const stream = new ReadableStream<Uint8Array>({
        async pull(c) {
          try {
            const { done, value } = await reader.read();
            if (!done) return c.enqueue(value);
            c.close();
          } catch (err) {
            c.error(err);
          }
          close();
        },
        cancel(reason) {
          close();
          return reader.cancel(reason);
        },
      });
      return new Response(stream, { status: res.status, statusText: res.statusText, headers: res.headers });
    },
  };
}
