import { runCli } from './cli.js';

// `forkd exec ... | head` closes our stdout early: stop quietly, like a local command.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(141);
    throw err;
  });
}

// No top-level await: the bundle ./forkd runs is CommonJS (scripts/bundle-cli.mjs).
async function main(): Promise<never> {
  const status = await runCli(process.argv.slice(2));
  // Exit explicitly: a live stdin reader or socket must not keep a finished command alive,
  // but only once what was written has been flushed.
  const flushed = (s: NodeJS.WriteStream) => new Promise<void>((resolve) => (s.writableLength ? s.write('', () => resolve()) : resolve()));
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(status);
}

void main();
