import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from './cli.js';

/** Runs the CLI with stdout/stderr captured. */
async function run(argv: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const out = { stdout: '', stderr: '' };
  const saved = { o: process.stdout.write, e: process.stderr.write };
  process.stdout.write = ((s: string) => ((out.stdout += s), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => ((out.stderr += s), true)) as typeof process.stderr.write;
  try {
    return { status: await runCli(argv), ...out };
  } finally {
    process.stdout.write = saved.o;
    process.stderr.write = saved.e;
  }
}

test('--help, COMMAND --help, help COMMAND, --version', async () => {
  const top = await run(['--help']);
  assert.equal(top.status, 0);
  assert.match(top.stdout, /Usage: forkd COMMAND/);
  for (const name of ['exec', 'shell', 'cp', 'ls', 'setup', 'serve', 'snapshot', 'timeline', 'fork', 'rewind', 'pause', 'resume', 'tree', 'snapshot-rm']) assert.match(top.stdout, new RegExp(`\\n  ${name} `));
  const exec = await run(['exec', '--help']);
  assert.equal(exec.status, 0);
  assert.match(exec.stdout, /bash -lc/);
  assert.equal((await run(['help', 'cp'])).stdout, (await run(['cp', '-h'])).stdout);
  assert.match((await run(['--version'])).stdout, /^forkd \d+\.\d+\.\d+\n$/);
});

test('usage errors exit 2 without contacting a server', async () => {
  const none = await run([]);
  assert.equal(none.status, 2);
  const bogus = await run(['bogus']);
  assert.equal(bogus.status, 2);
  assert.match(bogus.stderr, /^error: INVALID_ARGUMENT: unknown command "bogus"/);
  const flag = await run(['ls', '--bogus']);
  assert.equal(flag.status, 2);
  assert.match(flag.stderr, /unknown option '--bogus'.*\nRun 'forkd ls --help'/s);
  assert.equal((await run(['exec', 'sbx-1'])).status, 2);
  assert.equal((await run(['kill', 'sbx-1', 'notapid'])).status, 2);
  assert.equal((await run(['fork', 'notanid'])).status, 2);
  assert.equal((await run(['fork', 'sbx-1', '--count', '0'])).status, 2);
  assert.equal((await run(['rewind', 'sbx-1'])).status, 2);
  assert.equal((await run(['snapshot', 'sbx-1', '--name', 'a b'])).status, 2);
  assert.equal((await run(['snapshot-rm', 'sbx-1'])).status, 2);
});

test('--help after -- belongs to the remote command', async () => {
  // Parsing succeeds and it tries to reach the server: an error, not help.
  process.env.FORKD_URL = 'http://127.0.0.1:1';
  const r = await run(['exec', 'sbx-1', '--', 'ls', '--help']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^error: UNAVAILABLE: /);
});
