import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join, relative, sep } from 'node:path';
import type { Hono } from 'hono';
import { ForkdError } from '@forkd/protocol';
import type { AppEnv } from './app-env.js';
import { REPO_ROOT } from '../../shared/config.js';

/** Where the console's files are (packages/console: its assets.json, static/ and the compiled dist/). */
export const CONSOLE_DIR = join(REPO_ROOT, 'packages/console');

/** The URL prefix of everything but the page itself (`/`). */
export const CONSOLE_PREFIX = '/console/';

/**
 * Scripts only from this origin's files (no inline script, no eval); styles
 * may be inline because xterm.js writes its theme into `<style>` elements;
 * connections only back to this origin (the API and its WebSocket); no
 * framing, no forms posting anywhere, no `<base>`.
 */
export const CONSOLE_CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  // The URLs are not content-hashed: the browser asks again each time and gets a 304 while the ETag holds.
  'cache-control': 'no-cache',
};

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Manifest {
  index: string;
  static: Record<string, string>;
  vendor: Record<string, string>;
}

export interface ConsoleAsset {
  body: Buffer;
  type: string;
  etag: string;
}

/** A package file (`@scope/pkg/path`) found as Node would: node_modules of the console's directory or any above it. */
function packageFile(from: string, spec: string): string {
  for (let d = from; ; d = dirname(d)) {
    const p = join(d, 'node_modules', spec);
    if (existsSync(p)) return p;
    if (dirname(d) === d) throw new ForkdError('NOT_FOUND', `console asset ${spec} is not installed (run npm ci)`);
  }
}

/** `static/x` relative to the console's directory; anything else names a package file. */
function sourceFile(dir: string, ref: string): string {
  return ref.startsWith('@') || !ref.startsWith('static/') ? packageFile(dir, ref) : join(dir, ref);
}

function asset(file: string): ConsoleAsset {
  const body = readFileSync(file);
  return { body, type: TYPES[extname(file)] ?? 'application/octet-stream', etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

/** dist/'s modules (tests and the vendor re-exports left out), by their path under dist/. */
function appModules(dist: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js') && !e.name.endsWith('.test.js')) out.push(relative(dist, p).split(sep).join('/'));
    }
  };
  walk(dist);
  return out.filter((m) => !m.startsWith('vendor/'));
}

/**
 * Every file the console serves, by URL path, read once: a fixed table (no
 * path from a request ever reaches the filesystem). Throws NOT_FOUND when
 * the console is not built.
 */
export function loadConsoleAssets(dir: string = CONSOLE_DIR): Map<string, ConsoleAsset> {
  const manifestFile = join(dir, 'assets.json');
  const dist = join(dir, 'dist');
  if (!existsSync(manifestFile) || !existsSync(join(dist, 'main.js'))) throw new ForkdError('NOT_FOUND', 'the console is not built (run npm run build)');
  const m = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest;
  const files = new Map<string, ConsoleAsset>([['/', asset(join(dir, m.index))]]);
  for (const [name, ref] of Object.entries(m.static)) files.set(`${CONSOLE_PREFIX}${name}`, asset(sourceFile(dir, ref)));
  for (const mod of appModules(dist)) files.set(`${CONSOLE_PREFIX}app/${mod}`, asset(join(dist, mod)));
  for (const [name, ref] of Object.entries(m.vendor)) files.set(`${CONSOLE_PREFIX}app/vendor/${name}`, asset(sourceFile(dir, ref)));
  return files;
}

/**
 * Serves the console: `GET /` and `GET /console/…` only, mounted after the
 * port proxy (a sandbox's own host name keeps every path) and beside the
 * API (whose paths never start with these).
 */
export function mountConsole(app: Hono<AppEnv>, load: () => Map<string, ConsoleAsset> = () => loadConsoleAssets()): void {
  let files: Map<string, ConsoleAsset> | undefined;
  const serve = (path: string, ifNoneMatch: string | undefined): Response => {
    files ??= load();
    const a = files.get(path);
    if (!a) throw new ForkdError('NOT_FOUND', `no console file ${path.slice(0, 200)}`);
    const headers = { ...CONSOLE_HEADERS, etag: a.etag, 'content-type': a.type };
    if (ifNoneMatch === a.etag) return new Response(null, { status: 304, headers });
    return new Response(new Uint8Array(a.body), { status: 200, headers: { ...headers, 'content-length': String(a.body.length) } });
  };
  app.get('/', (c) => serve('/', c.req.header('if-none-match')));
  app.get(`${CONSOLE_PREFIX}*`, (c) => serve(c.req.path, c.req.header('if-none-match')));
}
