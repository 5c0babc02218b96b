import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { ForkdClient } from '@forkd/sdk';
import { createForkdMcpServer } from './mcp-server.js';

/** `forkd mcp`: the MCP server on stdin/stdout until the client closes stdin. */
export async function serveStdio(forkd: ForkdClient, version: string): Promise<void> {
  const server = createForkdMcpServer(forkd, version);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close();
}
