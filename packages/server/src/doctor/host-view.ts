import { readdir, readFile, stat } from 'node:fs/promises';
import { statfsSync } from 'node:fs';
import { join } from 'node:path';
import { exec } from '../shared/exec.js';
import type { PoolSpace } from '../node/storage/pool-space.js';

/** A file or program as this user sees it: root-only state reads `denied` to others. */
export type Presence = 'present' | 'missing' | 'denied';

export type ToolOutput = { kind: 'ran'; stdout: string } | { kind: 'missing' } | { kind: 'denied' };

/** What GET /v1/health of a URL answered. */
export type HealthAnswer = { kind: 'healthy' } | { kind: 'unhealthy'; detail: string } | { kind: 'down'; detail: string } | { kind: 'foreign'; detail: string };

/**
 * What the host checks read: files under `root` (the host's `/`, or a fake
 * tree of /proc, /sys, /dev and forkd's paths in tests), and the few things
 * a tree cannot fake (programs' output, statfs, HTTP), which tests replace.
 */
export interface HostView {
  readonly root: string;
  read(path: string): Promise<string | undefined>;
  presence(path: string): Promise<Presence>;
  list(path: string): Promise<string[]>;
  run(path: string, args: readonly string[]): Promise<ToolOutput>;
  space(path: string): PoolSpace | undefined;
  /** Its mode (st_mode, type bits included), undefined when absent. */
  mode(path: string): Promise<number | undefined>;
  health(url: string): Promise<HealthAnswer>;
}

const HEALTH_TIMEOUT_MS = 3000;
/** FORKD_URL may name anything: what answers is read only this far. */
const HEALTH_BODY_MAX = 4096;

/** The host as it is (`root` '/'), or a tree of the same shape with some probes replaced. */
export function hostView(root = '/', replaced: Partial<Omit<HostView, 'root'>> = {}): HostView {
  const at = (p: string) => join(root, p);
  const presence = async (p: string): Promise<Presence> =>
    stat(at(p)).then(
      () => 'present' as const,
      (err: NodeJS.ErrnoException) => (err.code === 'EACCES' ? 'denied' : 'missing'),
    );
  return {
    root,
    read: (p) => readFile(at(p), 'utf8').catch(() => undefined),
    mode: (p) => stat(at(p)).then((s) => s.mode, () => undefined),
    presence,
    list: (p) => readdir(at(p)).catch(() => []),
    async run(p, args) {
      const there = await presence(p);
      if (there !== 'present') return { kind: there };
      const r = await exec(at(p), args, { allowFailure: true, timeoutMs: 10_000 }).catch(() => undefined);
      return r ? { kind: 'ran', stdout: r.stdout } : { kind: 'missing' };
    },
    space(p) {
      try {
        const s = statfsSync(at(p));
        return { sizeBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
      } catch {
        return undefined;
      }
    },
    health: askHealth,
    ...replaced,
  };
}

async function askHealth(url: string): Promise<HealthAnswer> {
  let res: Response;
  try {
    res = await fetch(new URL('/v1/health', url), { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { kind: 'down', detail: cause ?? (err instanceof Error ? err.name : String(err)) };
  }
  const body = await head(res, HEALTH_BODY_MAX).catch(() => '');
  if (res.status === 200 && /"ok"\s*:\s*true/.test(body)) return { kind: 'healthy' };
  if (res.status === 503) return { kind: 'unhealthy', detail: body.slice(0, 300) };
  return { kind: 'foreign', detail: `HTTP ${res.status}` };
}

/** The first `max` bytes of a response's body (the rest is not read). */
async function head(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  while (n < max) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    n += value.length;
  }
  await reader.cancel().catch(() => {});
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}
