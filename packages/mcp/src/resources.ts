import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ForkdClient, ForkTree } from '@forkd/sdk';
import { SandboxId } from '@forkd/protocol';
import { sandboxSummary } from './sandbox-tools.js';
import { snapshotSummary } from './timeline-tools.js';

export const TIMELINE_URI = 'forkd://sandboxes/{sandbox_id}/timeline';
export const TREE_URI = 'forkd://sandboxes/{sandbox_id}/tree';

interface TreeNode {
  sandbox: Record<string, unknown>;
  children: TreeNode[];
}

function treeSummary(t: ForkTree): TreeNode {
  return { sandbox: sandboxSummary(t.sandbox), children: t.children.map(treeSummary) };
}

/** The id in a resource URI, checked as a tool argument would be (a bad one is INVALID_ARGUMENT, not a stray request). */
function sandboxIdOf(v: string | string[] | undefined): string {
  return SandboxId.parse(Array.isArray(v) ? v[0] : v);
}

const json = (uri: URL, value: unknown) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(value, null, 2) }] });

/** The timeline and the fork tree of each sandbox, as JSON resources a client can show. */
export function registerResources(server: McpServer, forkd: ForkdClient): void {
  const each = (suffix: string, what: string) => async () => ({
    resources: (await forkd.sandboxes.list()).map((s) => ({ uri: `forkd://sandboxes/${s.id}/${suffix}`, name: `${s.id} ${what}`, mimeType: 'application/json' })),
  });
  server.registerResource(
    'timeline',
    new ResourceTemplate(TIMELINE_URI, { list: each('timeline', 'timeline') }),
    { title: 'Sandbox timeline', description: 'The snapshots of a sandbox, oldest first (what sandbox_rewind and sandbox_fork can go back to).', mimeType: 'application/json' },
    async (uri, vars) => {
      const sbx = await forkd.sandboxes.get(sandboxIdOf(vars.sandbox_id));
      return json(uri, { sandbox_id: sbx.id, snapshots: (await sbx.timeline()).map(snapshotSummary) });
    },
  );
  server.registerResource(
    'tree',
    new ResourceTemplate(TREE_URI, { list: each('tree', 'fork tree') }),
    { title: 'Sandbox fork tree', description: 'A sandbox and the forks made from it, recursively.', mimeType: 'application/json' },
    async (uri, vars) => {
      const sbx = await forkd.sandboxes.get(sandboxIdOf(vars.sandbox_id));
      return json(uri, treeSummary(await sbx.tree()));
    },
  );
}
