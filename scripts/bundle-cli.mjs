#!/usr/bin/env node
// `node scripts/bundle-cli.mjs [OUTDIR]`: the CLI (with the SDK and protocol it uses) as a
// few CommonJS files, from tsc's output: what ./forkd, /usr/local/bin/forkd and the npm
// package's bin run. Node 20 has no compile cache: each of the ~40 ES modules of a
// `forkd exec` cost its start-up resolving, reading and linking, and the ES module loader
// alone costs a call ~10 ms to set up (its code is not in Node's start-up snapshot). So:
// esbuild splits the CLI into an entry and a chunk per command (ES modules: esbuild splits
// no other format), then each chunk is made CommonJS on its own, its imports of the other
// chunks left as require()s. A command loads the entry and its own chunks, each module
// once; one big file instead would cost every call compiling all of it (~300 KB, ~12 ms).
// Outside, loaded from node_modules on use: the server (an optional peer) and the MCP
// server (ES modules, through import()), and zod (CommonJS as well, for the commands that
// validate with protocol's schemas). protocol's ForkdError is therefore two classes in
// `forkd serve`; its instanceof recognises either (protocol/src/errors.ts).
// Source maps cost a call ~20 ms (Node reads and parses each map as it loads the file):
// the bin turns them on only where a stack may be read, FORKD_DEBUG (reportError prints
// stacks) and `forkd serve` (the daemon's log).
// OUTDIR (default packages/cli/dist/bundle) must be inside packages/cli: the CLI finds
// its package.json upward from its files. Written beside, then swapped in whole, so a
// `forkd` running meanwhile sees the old bundle or the new one.
import { build } from 'esbuild';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = process.argv[2] ?? `${root}packages/cli/dist/bundle`;
const next = `${out}.next-${process.pid}`;
const esm = `${out}.esm-${process.pid}`;
const old = `${out}.old-${process.pid}`;
const EXTERNAL = ['@forkd/server', '@forkd/server/*', '@forkd/mcp', '@forkd/mcp/*', 'zod', 'zod/*'];
const common = { bundle: true, platform: 'node', target: 'node20', sourcemap: 'linked', logLevel: 'warning' };

/** The split ES module build; its maps chained to tsc's, so a stack names the .ts lines. */
async function splitEsm() {
  await build({
    ...common,
    entryPoints: { cli: `${root}packages/cli/dist/main.js` },
    outdir: esm,
    splitting: true,
    format: 'esm',
    external: EXTERNAL,
    chunkNames: 'chunks/[name]-[hash]',
  });
  return (await readdir(esm, { recursive: true })).filter((f) => f.endsWith('.js'));
}

/** One chunk as CommonJS: the other chunks stay separate files (external), the maps chain on. */
async function toCommonJs(file) {
  const relative = { name: 'chunks-stay-apart', setup: (b) => b.onResolve({ filter: /^\.\.?\// }, (a) => (a.kind === 'entry-point' ? undefined : { path: a.path, external: true })) };
  await build({
    ...common,
    entryPoints: [`${esm}/${file}`],
    outfile: `${next}/${file}`,
    format: 'cjs',
    external: EXTERNAL,
    plugins: [relative],
    // package-dir.ts finds the package upward from its own file.
    define: { 'import.meta.url': '__forkdModuleUrl' },
    banner: { js: 'const __forkdModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
  });
  // esbuild keeps import() of what it leaves outside; a chunk's is a file of this bundle,
  // now CommonJS, loaded by require (import() would set up the ES module loader). Bare
  // specifiers (the server, the MCP server: ES modules) keep their import().
  const path = `${next}/${file}`;
  const text = await readFile(path, 'utf8');
  await writeFile(path, text.replace(/\bimport\(("(?:\.\.?\/[^"]+\.js|node:[a-z_/]+)")\)/g, 'Promise.resolve().then(() => require($1))'));
}

// The bin answers a bare --version itself, as cli.ts would: scripts and health checks call
// it most, and loading the entry's chunks and making process.stdout (which loads net for a
// pipe) cost it ~9 ms over Node's own start-up. The same text from the same package.json.
const bin = `#!/usr/bin/env node
'use strict';
// Made by scripts/bundle-cli.mjs: source maps only where a stack may be read (see there).
/** As package-dir.ts finds it: upward, the bundle may sit at any depth of the package. */
function cliVersion() {
  const fs = require('node:fs');
  const path = require('node:path');
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    let pkg;
    try {
      pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    } catch {}
    if (pkg && pkg.name === '@forkd/cli') return typeof pkg.version === 'string' ? pkg.version : 'unknown';
    if (path.dirname(dir) === dir) return 'unknown';
  }
}
const argv = process.argv;
if (argv.length === 3 && (argv[2] === '--version' || argv[2] === '-V' || argv[2] === 'version')) {
  try {
    require('node:fs').writeSync(1, 'forkd ' + cliVersion() + '\\n');
  } catch (err) {
    process.exitCode = err.code === 'EPIPE' ? 141 : 1;
  }
} else {
  const debug = process.env.FORKD_DEBUG;
  if ((debug && debug !== '0') || argv[2] === 'serve') process.setSourceMapsEnabled(true);
  require('./cli.js');
}
`;

try {
  for (const file of await splitEsm()) await toCommonJs(file);
  // The package is "type": "module"; this directory's .js files are CommonJS.
  await writeFile(`${next}/package.json`, '{ "type": "commonjs" }\n');
  await writeFile(`${next}/forkd.js`, bin, { mode: 0o755 });
} finally {
  await rm(esm, { recursive: true, force: true });
}
await rename(out, old).catch((err) => {
  if (err.code !== 'ENOENT') throw err;
});
await rename(next, out);
await rm(old, { recursive: true, force: true });
