export { createForkdMcpServer } from './mcp-server.js';
export { serveStdio } from './stdio.js';
export { mcpHttpEndpoint, type McpCaller, type McpHttpEndpoint } from './http-endpoint.js';
export { TIMELINE_URI, TREE_URI } from './resources.js';
export { OUTPUT_CAP_BYTES } from './output-cut.js';
export type { ApprovalWait, ApprovalWaitHook } from './notifier.js';
