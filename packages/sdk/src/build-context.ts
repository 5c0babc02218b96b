import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { CONTEXT_MAX_BYTES, CONTEXT_MAX_ENTRIES, ForkdError, type BuildContext, type ContextEntry } from '@forkd/protocol';
import { dockerignore, mayReinclude } from './dockerignore.js';

export interface ReadContextResult {
  context: BuildContext;
  /** Paths left out that are neither files, directories nor links (sockets, FIFOs, devices). */
  skipped: string[];
}

/**
 * A directory as a Dockerfile build's context (Node.js only: `@forkd/sdk/build-context`).
 * Nothing outside `dir` is read: links are sent as links (never followed;
 * the server resolves them inside the context), files are opened with
 * O_NOFOLLOW so one swapped for a link meanwhile fails the read instead of
 * reading its target, and `.dockerignore` (at `dir`'s top) leaves paths out.
 * Contents are sent once per sha256.
 */
export async function readBuildContext(dir: string): Promise<ReadContextResult> {
  const top = await lstat(dir).catch(() => undefined);
  if (!top?.isDirectory()) throw new ForkdError('INVALID_ARGUMENT', `the context ${dir} is not a directory`);
  const ignoreText = (await readSmall(join(dir, '.dockerignore')).catch(() => undefined))?.toString('utf8') ?? '';
  const ignored = dockerignore(ignoreText);
  const entries: ContextEntry[] = [];
  const blobs: Record<string, string> = {};
  const skipped: string[] = [];
  let bytes = 0;
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(join(dir, rel))).sort();
    for (const name of names) {
      const path = rel ? `${rel}/${name}` : name;
      const out = ignored(path);
      const st = await lstat(join(dir, path));
      if (st.isDirectory()) {
        if (!out) entries.push({ type: 'dir', path, mode: st.mode & 0o7777 });
        if (!out || mayReinclude(ignoreText, path)) await walk(path);
      } else if (out) continue;
      else if (st.isSymbolicLink()) entries.push({ type: 'symlink', path, target: await readlink(join(dir, path)) });
      else if (st.isFile()) {
        const data = await readSmall(join(dir, path));
        if ((bytes += data.length) > CONTEXT_MAX_BYTES) throw new ForkdError('INVALID_ARGUMENT', `the context is larger than ${CONTEXT_MAX_BYTES} bytes (list what the build does not need in .dockerignore)`);
        const sha256 = createHash('sha256').update(data).digest('hex');
        blobs[sha256] = data.toString('base64');
        entries.push({ type: 'file', path, mode: st.mode & 0o7777, sha256 });
      } else skipped.push(path);
      if (entries.length > CONTEXT_MAX_ENTRIES) throw new ForkdError('INVALID_ARGUMENT', `the context has more than ${CONTEXT_MAX_ENTRIES} entries`);
    }
  };
  await walk('');
  return { context: { entries, blobs }, skipped };
}

/** A regular file's bytes, opened without following a link (and refused if it is not a regular file by then). */
async function readSmall(path: string): Promise<Buffer> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new ForkdError('INVALID_ARGUMENT', `${path} is not a regular file`);
    if (st.size > CONTEXT_MAX_BYTES) throw new ForkdError('INVALID_ARGUMENT', `${path} is larger than ${CONTEXT_MAX_BYTES} bytes`);
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}
