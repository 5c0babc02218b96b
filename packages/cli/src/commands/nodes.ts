import type { NodeInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { formatAge, printJson, table } from '../format.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd nodes ls [--json]
       forkd nodes drain NODE...
       forkd nodes rm NODE...

The nodes of a fleet (admin keys only): a control plane started without
--node serves every node that joined it (FORKD_CONTROL_PLANE_URL and the
control plane's join.token on the node).

  ls      Lists nodes: id, state, memory free, pool free, sandboxes, last heartbeat.
  drain   The node takes no new sandboxes.
  rm      Forgets a node (refused while sandboxes are placed on it, unless it is lost).
`;

export type NodesArgs = { sub: 'ls'; json: boolean } | { sub: 'drain' | 'rm'; ids: string[] };

export function parseNodesArgs(argv: string[]): NodesArgs {
  const [sub, ...rest] = argv;
  if (sub === 'ls' || sub === 'list') {
    const { values, positionals } = parseOptions({ args: rest, allowPositionals: true, options: { json: { type: 'boolean' } } });
    expectPositionals(positionals, []);
    return { sub: 'ls', json: !!values.json };
  }
  if (sub === 'drain' || sub === 'rm') {
    const { positionals } = parseOptions({ args: rest, allowPositionals: true, options: {} });
    if (!positionals.length) throw new UsageError('missing NODE');
    return { sub, ids: positionals };
  }
  throw new UsageError(sub === undefined ? 'missing subcommand: ls, drain, rm' : `unknown subcommand ${JSON.stringify(sub)}: expected ls, drain, rm`);
}

const gb = (b: number) => `${(b / 1024 ** 3).toFixed(1)} GB`;

export function nodesTable(nodes: readonly NodeInfo[], now = Date.now()): string {
  return table(
    ['NODE', 'STATE', 'MEMORY FREE', 'POOL FREE', 'SANDBOXES', 'RUNNING', 'SEEN', 'URL'],
    nodes.map((n) => [n.id, n.state, gb(n.capacity.memoryFreeBytes), gb(n.capacity.poolFreeBytes), String(n.sandboxes), String(n.capacity.running), formatAge(n.lastSeenAt, now), n.url]),
  );
}

export const nodesCommand: CliCommand = {
  name: 'nodes',
  summary: 'list, drain and remove the nodes of a fleet',
  usage: USAGE,
  async run(argv) {
    const args = parseNodesArgs(argv);
    const client = connect();
    if (args.sub === 'ls') {
      const nodes = await client.nodes.list();
      if (args.json) printJson(nodes);
      else process.stdout.write(nodesTable(nodes));
      return 0;
    }
    for (const id of args.ids) {
      if (args.sub === 'drain') await client.nodes.drain(id);
      else await client.nodes.remove(id);
      process.stdout.write(`${id}\n`);
    }
    return 0;
  },
};
