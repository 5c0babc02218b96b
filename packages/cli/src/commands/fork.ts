import { MAX_FORK_COUNT } from '@forkd/protocol/ids';
import { expectPositionals, parseEnvPairs, parseLabelPairs, parseOptions, parsePositiveInt } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { printJson } from '../format.js';
import { UsageError } from '../usage-error.js';

/** The server's limit (ForkRequest in @forkd/protocol). */
const MAX_FORKS = MAX_FORK_COUNT;

const USAGE = `Usage: forkd fork ID|SNAPSHOT [--count N] [--env K=V]... [--metadata K=V]... [--json]

Makes new sandboxes with the memory and files of a sandbox as it is now
(sbx-...: an implicit snapshot is taken, it keeps running) or of one of
its snapshots (snap-...). Prints the new ids, one per line.

Options:
  -n, --count N       how many sandboxes to make (1 to ${MAX_FORKS}, default 1)
  -e, --env K=V       laid over the parent's env (repeatable): processes started
                      in the forks get it; the restored ones keep their own
      --metadata K=V  the forks' metadata instead of the parent's (repeatable)
      --json          print {"ids": [...], "proxyTokens": {id: token}} (tokens shown only here)
`;

export type ForkSource = { kind: 'sandbox'; id: string } | { kind: 'snapshot'; id: string };

export function parseForkSource(value: string): ForkSource {
  if (value.startsWith('snap-')) return { kind: 'snapshot', id: value };
  if (value.startsWith('sbx-')) return { kind: 'sandbox', id: value };
  throw new UsageError(`expected a sandbox id (sbx-...) or a snapshot id (snap-...), got ${JSON.stringify(value)}`);
}

export interface ForkArgs {
  source: ForkSource;
  count: number | undefined;
  env?: Record<string, string> | undefined;
  metadata?: Record<string, string> | undefined;
  json: boolean;
}

export function parseForkArgs(argv: string[]): ForkArgs {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: { count: { type: 'string', short: 'n' }, env: { type: 'string', short: 'e', multiple: true }, metadata: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  });
  const [source] = expectPositionals(positionals, ['ID|SNAPSHOT']);
  const count = parsePositiveInt('--count', values.count);
  if (count !== undefined && count > MAX_FORKS) throw new UsageError(`--count must be at most ${MAX_FORKS}, got ${count}`);
  const env = parseEnvPairs(values.env);
  const metadata = parseLabelPairs('--metadata', values.metadata);
  return { source: parseForkSource(source!), count, ...(env ? { env } : {}), ...(metadata ? { metadata } : {}), json: !!values.json };
}

export const forkCommand: CliCommand = {
  name: 'fork',
  usage: USAGE,
  async run(argv) {
    const args = parseForkArgs(argv);
    const client = connect();
    const opts = { ...(args.count !== undefined ? { count: args.count } : {}), ...(args.env ? { env: args.env } : {}), ...(args.metadata ? { metadata: args.metadata } : {}) };
    const forks =
      args.source.kind === 'snapshot' ? await client.snapshots.fork(args.source.id, opts) : await (await client.sandboxes.get(args.source.id)).fork(opts);
    const ids = forks.map((s) => s.id);
    if (args.json) printJson({ ids, proxyTokens: Object.fromEntries(forks.flatMap((s) => (s.info.proxyToken ? [[s.id, s.info.proxyToken]] : []))) });
    else process.stdout.write(ids.map((id) => `${id}\n`).join(''));
    return 0;
  },
};
