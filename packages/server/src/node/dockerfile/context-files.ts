import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { BuildContext, CONTEXT_MAX_BYTES, CONTEXT_MAX_ENTRIES, ForkdError, type ContextEntry } from '@forkd/protocol';

/** One entry a COPY source selected, and where it goes relative to the destination (`''`: the destination itself). */
export interface Selected {
  rel: string;
  entry: ContextEntry;
}

const MAX_HOPS = 40;
const invalid = (msg: string) => new ForkdError('INVALID_ARGUMENT', msg);

/**
 * A build's context as the request sent it: entries by path, contents by
 * sha256 (each checked against its hash). Nothing here touches the host's
 * files: a COPY reads only these, so no path or link in it can reach
 * outside the context. Links on a source's way are resolved inside the
 * context (absolute targets from its root, `..` stopping there), as
 * Docker's FollowSymlinkInScope does; links inside a copied directory are
 * copied as links.
 */
export class ContextFiles {
  readonly #entries = new Map<string, ContextEntry>();
  readonly #blobs = new Map<string, Buffer>();
  readonly #sorted: string[];
  readonly #children = new Map<string, string[]>();

  constructor(input: BuildContext | undefined) {
    const parsed = BuildContext.safeParse(input ?? { entries: [] });
    if (!parsed.success) throw invalid(`context: ${parsed.error.issues[0]?.path.join('.') ?? ''}: ${parsed.error.issues[0]?.message ?? ''}`);
    let bytes = 0;
    for (const [sha, b64] of Object.entries(parsed.data.blobs)) {
      const data = Buffer.from(b64, 'base64');
      if ((bytes += data.length) > CONTEXT_MAX_BYTES) throw invalid(`the context is larger than ${CONTEXT_MAX_BYTES} bytes`);
      if (createHash('sha256').update(data).digest('hex') !== sha) throw invalid(`context blob ${sha} does not match its sha256`);
      this.#blobs.set(sha, data);
    }
    for (const e of parsed.data.entries) {
      if (this.#entries.has(e.path)) throw invalid(`context path ${JSON.stringify(e.path)} is listed twice`);
      if (e.type === 'file' && !this.#blobs.has(e.sha256)) throw invalid(`context file ${JSON.stringify(e.path)}: its contents (${e.sha256}) were not sent`);
      this.#entries.set(e.path, e);
    }
    // Parents that were not listed are directories (0755): a file's path implies them. Each is looked at once.
    const seen = new Set<string>();
    for (const p of [...this.#entries.keys()]) {
      for (let d = posix.dirname(p); d !== '.' && !seen.has(d); d = posix.dirname(d)) {
        seen.add(d);
        const at = this.#entries.get(d);
        if (at && at.type !== 'dir') throw invalid(`context path ${JSON.stringify(p)} is under a ${at.type}`);
        if (at) continue;
        if (this.#entries.size >= 2 * CONTEXT_MAX_ENTRIES) throw invalid(`the context's paths imply more than ${2 * CONTEXT_MAX_ENTRIES} entries`);
        this.#entries.set(d, { type: 'dir', path: d, mode: 0o755 });
      }
    }
    // Sorted, a directory's descendants are one range (found by binary search); children by parent, for wildcards.
    this.#sorted = [...this.#entries.keys()].sort();
    for (const p of this.#sorted) {
      const parent = p.includes('/') ? posix.dirname(p) : '';
      const list = this.#children.get(parent);
      if (list) list.push(p);
      else this.#children.set(parent, [p]);
    }
  }

  blob(sha: string): Buffer {
    return this.#blobs.get(sha)!;
  }

  /**
   * What one COPY source names: a file or link (`file`, rel its name), a
   * directory's contents (rel under it), or for a wildcard each match (a
   * file by its name, a directory by its contents).
   */
  select(source: string): { file: boolean; items: Selected[] } {
    // Cleaned against the context's root, as Docker does: `..` cannot climb out of it.
    const parts = posix.normalize(`/${source}`).split('/').filter(Boolean);
    if (parts.some((s) => /[*?[]/.test(s))) {
      const matches = this.#glob(parts);
      if (!matches.length) throw new ForkdError('NOT_FOUND', `no file in the context matches ${JSON.stringify(source)}`);
      return { file: false, items: matches.flatMap((m) => this.#under(m, posix.basename(m))) };
    }
    const path = this.#resolve(parts, true);
    if (path === undefined) throw new ForkdError('NOT_FOUND', `${JSON.stringify(source)} is not in the context`);
    const items = this.#under(path, parts.at(-1) ?? '');
    return { file: path !== '' && this.#entries.get(path)?.type !== 'dir', items };
  }

  /** The file or link at `path` as `name`, or the directory at `path` as its descendants. */
  #under(path: string, name: string): Selected[] {
    const e = path === '' ? undefined : this.#entries.get(path);
    if (e && e.type !== 'dir') return [{ rel: name, entry: e }];
    const prefix = path === '' ? '' : `${path}/`;
    const out: Selected[] = [];
    for (let i = lowerBound(this.#sorted, prefix); i < this.#sorted.length && this.#sorted[i]!.startsWith(prefix); i++) {
      const p = this.#sorted[i]!;
      out.push({ rel: p.slice(prefix.length), entry: this.#entries.get(p)! });
    }
    return out;
  }

  /** Context paths matching a pattern part by part (Go's filepath.Match per part, as Docker). */
  #glob(parts: string[]): string[] {
    let level = [''];
    for (const part of parts) {
      const re = globPart(part);
      const next: string[] = [];
      for (const dir of level) {
        const d = this.#resolve(dir ? dir.split('/') : [], true);
        if (d === undefined) continue;
        for (const p of this.#children.get(d) ?? []) if (re.test(posix.basename(p))) next.push(p);
      }
      level = [...new Set(next)];
    }
    return [...new Set(level)].sort();
  }

  /** A path with the links on its way resolved inside the context (the last part's too when `last`); undefined when missing. */
  #resolve(parts: readonly string[], last: boolean): string | undefined {
    const cur: string[] = [];
    const queue = [...parts];
    let hops = 0;
    while (queue.length) {
      const s = queue.shift()!;
      if (s === '' || s === '.') continue;
      if (s === '..') {
        cur.pop();
        continue;
      }
      const p = [...cur, s].join('/');
      const e = this.#entries.get(p);
      if (!e) return undefined;
      if (e.type === 'symlink' && (queue.length > 0 || last)) {
        if (++hops > MAX_HOPS) throw invalid(`too many links resolving ${JSON.stringify(parts.join('/'))} in the context`);
        if (e.target.startsWith('/')) cur.length = 0;
        queue.unshift(...e.target.split('/'));
        continue;
      }
      if (queue.length > 0 && e.type !== 'dir') return undefined;
      cur.push(s);
    }
    return cur.join('/');
  }
}

/** The first index of a sorted array whose string is not below `key`. */
function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One path part of a COPY pattern as a regular expression: `*`, `?`, `[...]` (with `^` or `!`), `\x`. */
export function globPart(part: string): RegExp {
  let re = '';
  for (let i = 0; i < part.length; i++) {
    const c = part[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '\\' && i + 1 < part.length) re += escapeRe(part[++i]!);
    else if (c === '[') {
      const end = part.indexOf(']', i + 2);
      if (end < 0) {
        re += '\\[';
        continue;
      }
      let body = part.slice(i + 1, end);
      const neg = body.startsWith('^') || body.startsWith('!');
      if (neg) body = body.slice(1);
      re += `[${neg ? '^' : ''}${body.replace(/[\\\]]/g, (m) => `\\${m}`)}]`;
      i = end;
    } else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`, 's');
}

const escapeRe = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, (m) => `\\${m}`);

/** What a COPY's cache key takes of its files: each selected entry's place, type, mode and contents' (or target's) hash. */
export function selectionDigest(selections: readonly { file: boolean; items: readonly Selected[] }[]): string {
  const h = createHash('sha256');
  for (const sel of selections) {
    h.update(`source ${sel.file}\0`);
    for (const { rel, entry: e } of sel.items) h.update(`${rel}\0${e.type}\0${e.type === 'symlink' ? e.target : `${e.mode}\0${e.type === 'file' ? e.sha256 : ''}`}\n`);
  }
  return h.digest('hex');
}
