import type { CreateSandboxOptions } from '@forkd/sdk';
import { expectPositionals, parseEnvPairs, parseLabelPairs, parseOptions, parsePositiveInt, parsePositiveNumber } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { printJson } from '../format.js';
import { UsageError } from '../usage-error.js';
import { NETWORK_LIMIT_OPTIONS, NETWORK_LIMIT_USAGE, parseMode, parseNetworkLimits } from './network-args.js';

const USAGE = `Usage: forkd create [options]

Creates a sandbox and prints its id.

Options:
  -t, --template NAME   template to start from (default base; see forkd template ls)
  -m, --memory MB       memory limit in MiB (default 512)
      --cpus N          CPU limit, fractions allowed (default 1)
      --pids N          process limit (default 1024)
      --disk MB         disk quota in MiB: what its files may hold beyond the template's (default: the server's, 10240)
  -e, --env K=V         environment of every process in it (repeatable)
      --metadata K=V    a label kept with the sandbox (repeatable; forkd ls --metadata filters)
      --timeout S       lifetime: time out S seconds after creation (default: none)
      --on-timeout WHAT pause (default: keeps everything), pause-files (keeps only
                        its files: the resume starts it cold) or kill (deletes it)
      --network MODE    none (default: loopback only) or egress (outbound through NAT)
      --allow-out RULE  egress: an allowed destination, IPv4 address, CIDR or domain name
                        (example.com, *.example.com; repeatable)
      --deny-out RULE   egress: a denied destination (repeatable; allow wins; private,
                        link-local and host addresses are denied unless allowed)
${NETWORK_LIMIT_USAGE}      --json            print {"id": ..., "proxyToken": ...} (the port proxy's token, shown only here)
`;

export interface CreateArgs {
  request: CreateSandboxOptions;
  json: boolean;
}

export function parseCreateArgs(argv: string[]): CreateArgs {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: {
      template: { type: 'string', short: 't' },
      memory: { type: 'string', short: 'm' },
      cpus: { type: 'string' },
      pids: { type: 'string' },
      disk: { type: 'string' },
      env: { type: 'string', short: 'e', multiple: true },
      metadata: { type: 'string', multiple: true },
      timeout: { type: 'string' },
      'on-timeout': { type: 'string' },
      network: { type: 'string' },
      'allow-out': { type: 'string', multiple: true },
      'deny-out': { type: 'string', multiple: true },
      ...NETWORK_LIMIT_OPTIONS,
      json: { type: 'boolean' },
    },
  });
  expectPositionals(positionals, []);
  const request: CreateSandboxOptions = {};
  if (values.template !== undefined) request.template = values.template;
  const memoryMb = parsePositiveInt('--memory', values.memory);
  if (memoryMb !== undefined) request.memoryMb = memoryMb;
  const cpus = parsePositiveNumber('--cpus', values.cpus);
  if (cpus !== undefined) request.cpus = cpus;
  const pids = parsePositiveInt('--pids', values.pids);
  if (pids !== undefined) request.pids = pids;
  const diskMb = parsePositiveInt('--disk', values.disk);
  if (diskMb !== undefined) request.diskMb = diskMb;
  const env = parseEnvPairs(values.env);
  if (env) request.env = env;
  const metadata = parseLabelPairs('--metadata', values.metadata);
  if (metadata) request.metadata = metadata;
  const timeout = parsePositiveInt('--timeout', values.timeout);
  if (timeout !== undefined) request.timeoutSeconds = timeout;
  const on = values['on-timeout'];
  if (on !== undefined) {
    if (on !== 'pause' && on !== 'pause-files' && on !== 'kill') throw new UsageError('--on-timeout must be pause, pause-files or kill');
    request.onTimeout = on === 'kill' ? 'kill' : 'pause';
    if (on === 'pause-files') request.timeoutPauseMemory = false;
  }
  const mode = parseMode('--network', values.network);
  const allowOut = values['allow-out'] ?? [];
  const denyOut = values['deny-out'] ?? [];
  const limits = parseNetworkLimits(values);
  if ((allowOut.length || denyOut.length || Object.keys(limits).length) && mode !== 'egress') throw new UsageError('--allow-out, --deny-out, --bandwidth and --max-connections need --network egress');
  if (mode !== undefined) request.network = { mode, allowOut, denyOut, ...limits };
  return { request, json: !!values.json };
}

export const createCommand: CliCommand = {
  name: 'create',
  usage: USAGE,
  async run(argv) {
    const args = parseCreateArgs(argv);
    const sb = await connect().sandboxes.create(args.request);
    if (args.json) printJson({ id: sb.id, ...(sb.info.proxyToken ? { proxyToken: sb.info.proxyToken } : {}) });
    else process.stdout.write(`${sb.id}\n`);
    return 0;
  },
};
