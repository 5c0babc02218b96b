#!/usr/bin/env node
// `node scripts/bundle-cli.mjs [OUTDIR]`: the CLI (with the SDK and protocol it uses) as
// a few ESM files, from tsc's output: what ./forkd, /usr/local/bin/forkd and the npm
// package's bin run. Node 20 has no compile cache, and each of the ~40 modules of a
// `forkd exec` cost its start-up resolving, reading and linking (≈ 1 ms each on 2 busy
// cores); the bundle is one entry plus a chunk per command, loaded when it runs.
// The CLI's own code and the SDK's go in; the other packages stay outside, loaded from
// node_modules as before: the server (an optional peer, loaded on use), the MCP server, and
// @forkd/protocol, so that ForkdError is one class whether the CLI or the server threw it
// (serve, setup and install run the server in this process) and zod comes with it.
// OUTDIR (default packages/cli/dist/bundle) must be inside packages/cli: the CLI finds
// its package.json upward from its files. Written beside, then swapped in whole, so a
// `forkd` running meanwhile sees the old bundle or the new one.
import { build } from 'esbuild';
import { rename, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = process.argv[2] ?? `${root}packages/cli/dist/bundle`;
const next = `${out}.next-${process.pid}`;
const old = `${out}.old-${process.pid}`;

await build({
  entryPoints: { forkd: `${root}packages/cli/dist/main.js` },
  outdir: next,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['@forkd/server', '@forkd/server/*', '@forkd/protocol', '@forkd/protocol/*', '@forkd/mcp', '@forkd/mcp/*'],
  // Chained to tsc's maps: a stack under --enable-source-maps names the .ts lines.
  sourcemap: 'linked',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
});
await rename(out, old).catch((err) => {
  if (err.code !== 'ENOENT') throw err;
});
await rename(next, out);
await rm(old, { recursive: true, force: true });
