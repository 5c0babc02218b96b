import { grantHostError, parseHeaderTemplate, SecretName, type CreateGrantRequest } from '@forkd/protocol';
import type { GrantInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions, parsePositiveInt } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { formatAge, printJson, table } from '../format.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd grant create ID --secret NAME --host HOST[:PORT]... --header 'Name: text with {secret}'
                          [--method M]... [--path PREFIX]... [--ttl S] [--json]
       forkd grant ls ID [--json]
       forkd grant rm ID GRANT...

Grants let a sandbox's outbound requests carry a secret: the egress proxy
adds the header (with {secret} replaced by the value) to requests from
sandbox ID to the hosts given, over HTTP and HTTPS (terminated with the
sandbox's own CA, which it trusts; the CA key stays on the host). The value
never enters the sandbox. Removing a grant applies to the next request; an
expired one is refused at once. Forks do not inherit grants.

  create  Prints the grant id (with --json: the grant, {"id": ...}).
  ls      The sandbox's live grants (per-call ones of running exec calls too).
  rm      Revokes grants.

Options:
      --secret NAME   the secret (forkd secret set NAME)
      --host H        host[:port] or *.suffix[:port], port 80 or 443 (the only
                      ones the egress proxy sees); no port: both (repeatable)
      --header T      'Name: text with {secret}', e.g. 'Authorization: Bearer {secret}'
      --method M      only these methods (repeatable)
      --path P        only paths under these prefixes (repeatable)
      --ttl S         expires after S seconds (default: until removed)
      --json          print JSON
`;

export type GrantArgs = { sub: 'create'; id: string; request: CreateGrantRequest; json: boolean } | { sub: 'ls'; id: string; json: boolean } | { sub: 'rm'; id: string; grants: string[] };

export function parseGrantArgs(argv: string[]): GrantArgs {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'create': {
      const { values, positionals } = parseOptions({
        args: rest,
        allowPositionals: true,
        options: { secret: { type: 'string' }, host: { type: 'string', multiple: true }, header: { type: 'string' }, method: { type: 'string', multiple: true }, path: { type: 'string', multiple: true }, ttl: { type: 'string' }, json: { type: 'boolean' } },
      });
      const [id] = expectPositionals(positionals, ['ID']);
      if (values.secret === undefined) throw new UsageError('missing --secret NAME');
      if (!SecretName.safeParse(values.secret).success) throw new UsageError(`invalid secret name ${JSON.stringify(values.secret)}`);
      const hosts = (values.host ?? []).map((h) => h.toLowerCase());
      if (!hosts.length) throw new UsageError('missing --host HOST[:PORT]');
      for (const h of hosts) {
        const err = grantHostError(h);
        if (err) throw new UsageError(`--host ${err}`);
      }
      if (values.header === undefined) throw new UsageError("missing --header 'Name: text with {secret}'");
      const t = parseHeaderTemplate(values.header);
      if (typeof t === 'string') throw new UsageError(`--header: ${t}`);
      const request: CreateGrantRequest = { secret: values.secret, hosts, header: values.header };
      if (values.method?.length) request.methods = values.method.map((m) => m.toUpperCase());
      if (values.path?.length) request.paths = values.path;
      const ttl = parsePositiveInt('--ttl', values.ttl);
      if (ttl !== undefined) request.ttlSeconds = ttl;
      return { sub, id: id!, request, json: !!values.json };
    }
    case 'ls': {
      const { values, positionals } = parseOptions({ args: rest, allowPositionals: true, options: { json: { type: 'boolean' } } });
      const [id] = expectPositionals(positionals, ['ID']);
      return { sub, id: id!, json: !!values.json };
    }
    case 'rm': {
      const { positionals } = parseOptions({ args: rest, allowPositionals: true, options: {} });
      const [id, ...grants] = positionals;
      if (id === undefined) throw new UsageError('missing ID');
      if (!grants.length) throw new UsageError('missing GRANT');
      return { sub, id, grants };
    }
  }
  throw new UsageError(sub === undefined ? 'missing subcommand: create, ls, rm' : `unknown subcommand ${JSON.stringify(sub)}: expected create, ls, rm`);
}

export function grantsTable(grants: readonly GrantInfo[], now = Date.now()): string {
  return table(
    ['ID', 'SECRET', 'HOSTS', 'HEADER', 'METHODS', 'PATHS', 'CREATED', 'EXPIRES'],
    grants.map((g) => [g.id, g.secret, g.hosts.join(','), g.header, g.methods?.join(',') ?? '*', g.paths?.join(',') ?? '*', formatAge(g.createdAt, now), g.perCall ? 'end of call' : (g.expiresAt ?? 'never')]),
  );
}

export const grantCommand: CliCommand = {
  name: 'grant',
  usage: USAGE,
  async run(argv) {
    const args = parseGrantArgs(argv);
    const sb = await openSandbox(args.id);
    switch (args.sub) {
      case 'create': {
        const g = await sb.createGrant(args.request);
        if (args.json) printJson(g);
        else process.stdout.write(`${g.id}\n`);
        return 0;
      }
      case 'ls': {
        const list = await sb.listGrants();
        if (args.json) printJson(list);
        else process.stdout.write(grantsTable(list));
        return 0;
      }
      case 'rm':
        for (const g of args.grants) {
          await sb.removeGrant(g);
          process.stdout.write(`${g}\n`);
        }
        return 0;
    }
  },
};
