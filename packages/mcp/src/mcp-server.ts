import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ForkdClient } from '@forkd/sdk';
import { registerSandboxTools } from './sandbox-tools.js';
import { registerExecTool } from './exec-tool.js';
import { registerFileTools } from './file-tools.js';
import { registerTimelineTools } from './timeline-tools.js';
import { registerResources } from './resources.js';

const INSTRUCTIONS = `forkd gives you Linux sandboxes whose whole state (memory and files) can be checkpointed, rewound and forked.
Workflow: sandbox_create, then sandbox_exec / file_* in it. Before a risky step, snapshot_create; if it goes wrong, sandbox_rewind to that snapshot. To compare approaches, sandbox_fork into several sandboxes and try one in each. sandbox_kill what you no longer need.`;

/**
 * forkd's MCP server over one SDK client: every tool is an API call with the
 * client's key, so the API's authentication, policy, approvals, quotas and
 * audit log apply to it exactly as to any other call.
 */
export function createForkdMcpServer(forkd: ForkdClient, version: string): McpServer {
  const server = new McpServer({ name: 'forkd', version }, { instructions: INSTRUCTIONS, capabilities: { logging: {} } });
  registerSandboxTools(server, forkd);
  registerExecTool(server, forkd);
  registerFileTools(server, forkd);
  registerTimelineTools(server, forkd);
  registerResources(server, forkd);
  return server;
}
