import { SecretName } from '@forkd/protocol';
import type { SecretInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { formatAge, printJson, table } from '../format.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd secret set NAME        (the value on stdin)
       forkd secret ls [--json]
       forkd secret rm NAME...

The tenant's secrets, stored encrypted on the server. A value goes in and
never comes out: no command or API call shows it. A sandbox gets one only as
a header that the egress proxy adds to its requests, by grant (forkd grant):
the value never enters the sandbox's disk, environment or memory.

  set   Creates or replaces NAME with stdin (one trailing newline dropped).
  ls    Names, created and updated times.
  rm    Removes secrets and every grant of them, at once.
`;

export type SecretArgs = { sub: 'set'; name: string } | { sub: 'ls'; json: boolean } | { sub: 'rm'; names: string[] };

function secretName(n: string): string {
  if (!SecretName.safeParse(n).success) throw new UsageError(`invalid secret name ${JSON.stringify(n)}: a letter or _, then letters, digits, _ . -`);
  return n;
}

export function parseSecretArgs(argv: string[]): SecretArgs {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'set': {
      const { positionals } = parseOptions({ args: rest, allowPositionals: true, options: {} });
      const [name] = expectPositionals(positionals, ['NAME']);
      return { sub, name: secretName(name!) };
    }
    case 'ls': {
      const { values, positionals } = parseOptions({ args: rest, allowPositionals: true, options: { json: { type: 'boolean' } } });
      expectPositionals(positionals, []);
      return { sub, json: !!values.json };
    }
    case 'rm': {
      const { positionals } = parseOptions({ args: rest, allowPositionals: true, options: {} });
      if (!positionals.length) throw new UsageError('missing NAME');
      return { sub, names: positionals.map(secretName) };
    }
  }
  throw new UsageError(sub === undefined ? 'missing subcommand: set, ls, rm' : `unknown subcommand ${JSON.stringify(sub)}: expected set, ls, rm`);
}

/** The value: stdin whole, less one trailing newline (what `echo` and a heredoc add). */
export function secretValue(stdin: Buffer): string {
  const s = stdin.toString('utf8');
  return s.endsWith('\r\n') ? s.slice(0, -2) : s.endsWith('\n') ? s.slice(0, -1) : s;
}

async function readStdin(): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of process.stdin) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

export function secretsTable(secrets: readonly SecretInfo[], now = Date.now()): string {
  return table(['NAME', 'CREATED', 'UPDATED'], secrets.map((s) => [s.name, formatAge(s.createdAt, now), formatAge(s.updatedAt, now)]));
}

export const secretCommand: CliCommand = {
  name: 'secret',
  usage: USAGE,
  async run(argv) {
    const args = parseSecretArgs(argv);
    const client = connect();
    switch (args.sub) {
      case 'set': {
        if (process.stdin.isTTY) process.stderr.write('reading the value from stdin (end with Ctrl-D)\n');
        const value = secretValue(await readStdin());
        if (!value) throw new UsageError('empty value on stdin');
        const s = await client.secrets.set(args.name, value);
        process.stdout.write(`${s.name}\n`);
        return 0;
      }
      case 'ls': {
        const list = await client.secrets.list();
        if (args.json) printJson(list);
        else process.stdout.write(secretsTable(list));
        return 0;
      }
      case 'rm':
        for (const n of args.names) {
          await client.secrets.remove(n);
          process.stdout.write(`${n}\n`);
        }
        return 0;
    }
  },
};
