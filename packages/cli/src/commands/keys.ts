import { TenantName } from '@forkd/protocol';
import type { CreateKeyRequest, KeyInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { formatAge, printJson, table } from '../format.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd keys create [--tenant T] [--format forkd|e2b] [--name N] [--admin] [--json]
       forkd keys list [--json]
       forkd keys revoke ID...

API keys. Every key belongs to one tenant and sees only that tenant's
sandboxes, snapshots, templates and audit records. The server keeps only a
hash: a key is shown once, when it is created. Creating keys needs an admin
key (on the server's machine, root uses the one forkd setup made).

  create   Prints the new key (with --json: {"key": ..., "info": {...}}).
  list     Lists keys: id, tenant, prefix, created, revoked.
  revoke   Revokes keys; calls with them fail from then on.

Options:
      --tenant T        create: the key's tenant (default: the caller's)
      --format F        create: forkd (default) or e2b (e2b_ + 40 hex digits,
                        for the official e2b SDKs)
      --name N          create: a label shown by list
      --admin           create: an admin key (every tenant's keys, limits, network
                        policies, audit records and sandboxes, the fleet's nodes,
                        shared templates, /metrics)
      --json            print JSON
`;

export type KeysArgs = { sub: 'create'; request: CreateKeyRequest; json: boolean } | { sub: 'list'; json: boolean } | { sub: 'revoke'; ids: string[] };

export function parseKeysArgs(argv: string[]): KeysArgs {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'create': {
      const { values, positionals } = parseOptions({
        args: rest,
        allowPositionals: true,
        options: { tenant: { type: 'string' }, format: { type: 'string' }, name: { type: 'string' }, admin: { type: 'boolean' }, json: { type: 'boolean' } },
      });
      expectPositionals(positionals, []);
      const request: CreateKeyRequest = {};
      if (values.tenant !== undefined) {
        if (!TenantName.safeParse(values.tenant).success) throw new UsageError(`invalid tenant ${JSON.stringify(values.tenant)}: lowercase letters, digits and dashes`);
        request.tenant = values.tenant;
      }
      if (values.format !== undefined) {
        if (values.format !== 'forkd' && values.format !== 'e2b') throw new UsageError('--format must be forkd or e2b');
        request.format = values.format;
      }
      if (values.name !== undefined) request.name = values.name;
      if (values.admin) request.admin = true;
      return { sub, request, json: !!values.json };
    }
    case 'list': {
      const { values, positionals } = parseOptions({ args: rest, allowPositionals: true, options: { json: { type: 'boolean' } } });
      expectPositionals(positionals, []);
      return { sub, json: !!values.json };
    }
    case 'revoke': {
      const { positionals } = parseOptions({ args: rest, allowPositionals: true, options: {} });
      if (!positionals.length) throw new UsageError('missing ID');
      return { sub, ids: positionals };
    }
  }
  throw new UsageError(sub === undefined ? 'missing subcommand: create, list, revoke' : `unknown subcommand ${JSON.stringify(sub)}: expected create, list, revoke`);
}

export function keysTable(keys: readonly KeyInfo[], now = Date.now()): string {
  return table(
    ['ID', 'TENANT', 'PREFIX', 'ADMIN', 'NAME', 'CREATED', 'REVOKED'],
    keys.map((k) => [k.id, k.tenant, `${k.prefix}…`, k.admin ? 'yes' : 'no', k.name ?? '-', formatAge(k.createdAt, now), k.revokedAt ? formatAge(k.revokedAt, now) : '-']),
  );
}

export const keysCommand: CliCommand = {
  name: 'keys',
  usage: USAGE,
  async run(argv) {
    const args = parseKeysArgs(argv);
    const client = connect();
    switch (args.sub) {
      case 'create': {
        const created = await client.keys.create(args.request);
        if (args.json) printJson(created);
        else process.stdout.write(`${created.key}\n`);
        return 0;
      }
      case 'list': {
        const keys = await client.keys.list();
        if (args.json) printJson(keys);
        else process.stdout.write(keysTable(keys));
        return 0;
      }
      case 'revoke':
        for (const id of args.ids) {
          await client.keys.revoke(id);
          process.stdout.write(`${id}\n`);
        }
        return 0;
    }
  },
};
