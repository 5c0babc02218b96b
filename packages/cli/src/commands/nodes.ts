import type { NodeInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { formatAge, printJson, table } from '../format.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd nodes ls [--json]
       forkd nodes drain NODE...
       forkd nodes rm NODE...
       forkd nodes migrate SANDBOX [--to NODE]

The nodes of a fleet (admin keys only): a control plane started without
--node serves every node that joined it (FORKD_CONTROL_PLANE_URL and the
control plane's join.token on the node).

  ls       Lists nodes: id, state, memory free, pool free, sandboxes, last heartbeat.
  drain    The node takes no new sandboxes, and every sandbox on it moves to
           another node (same id, processes and memory); prints what moved.
  rm       Forgets a node (refused while sandboxes are placed on it, unless it is lost).
  migrate  Moves one sandbox, to NODE or where placement says.
`;

export type NodesArgs = { sub: 'ls'; json: boolean } | { sub: 'drain' | 'rm'; ids: string[] } | { sub: 'migrate'; sandbox: string; to?: string };

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
  if (sub === 'migrate') {
    const { values, positionals } = parseOptions({ args: rest, allowPositionals: true, options: { to: { type: 'string' } } });
    const [sandbox, ...extra] = positionals;
    if (!sandbox || extra.length) throw new UsageError('expected one SANDBOX');
    return { sub, sandbox, ...(values.to !== undefined ? { to: values.to } : {}) };
  }
  throw new UsageError(sub === undefined ? 'missing subcommand: ls, drain, rm, migrate' : `unknown subcommand ${JSON.stringify(sub)}: expected ls, drain, rm, migrate`);
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
    if (args.sub === 'migrate') {
      const m = await client.nodes.migrate(args.sandbox, args.to);
      process.stdout.write(`${m.sandbox.id} ${m.from} -> ${m.to} (${m.ms} ms)\n`);
      return 0;
    }
    let failed = 0;
    for (const id of args.ids) {
      if (args.sub === 'rm') {
        await client.nodes.remove(id);
        process.stdout.write(`${id}\n`);
        continue;
      }
      const r = await client.nodes.drain(id);
      for (const m of r.moved) process.stdout.write(`${m.sandbox.id} ${m.from} -> ${m.to}\n`);
      for (const f of r.failed) process.stderr.write(`${f.sandbox}: ${f.code}: ${f.message}\n`);
      failed += r.failed.length;
    }
    return failed ? 1 : 0;
  },
};
