import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { CONTEXT_MAX_BYTES, CONTEXT_MAX_ENTRIES, type BuildContext, type ContextEntry } from '@forkd/protocol';
import { tarEntries } from '../../node/images/tar-reader.js';

export type UploadResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** What E2B's SDK uploads for one COPY: a tar (gzipped unless the copy said otherwise) of the matched files, paths relative to its context. */
export interface Upload {
  /** The context directory its files go under (template-steps.ts names one per files hash). */
  dir: string;
  data: Buffer;
}

const bad = (error: string): { ok: false; error: string } => ({ ok: false, error });

/** A member's path as a context path under `dir`; undefined for the archive's root itself; an error for one that climbs out. */
function contextPath(dir: string, raw: string): UploadResult<string | undefined> {
  const clean = posix.normalize(`/${raw}`).slice(1).replace(/\/$/, '');
  if (raw.split('/').includes('..')) return bad(`an uploaded path climbs out of the context: ${JSON.stringify(raw.slice(0, 100))}`);
  return { ok: true, value: clean === '' ? undefined : `${dir}/${clean}` };
}

/** Bytes of a tar, gunzipped if gzipped, within what a context may hold. */
function tarBytes(data: Buffer, room: number): UploadResult<Buffer> {
  if (data.length < 2 || data[0] !== 0x1f || data[1] !== 0x8b) return { ok: true, value: data };
  try {
    return { ok: true, value: gunzipSync(data, { maxOutputLength: room }) };
  } catch (err) {
    return bad((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? `the uploaded files are larger than ${CONTEXT_MAX_BYTES} bytes` : 'an upload is not a valid gzip stream');
  }
}

/**
 * The build context of a template's uploads: each upload's files (regular
 * files, directories, symlinks kept as links, hard links as copies) under
 * its own directory. Untrusted bytes: every failure is a result; sizes and
 * counts stop at the context's limits (protocol build-context.ts).
 */
export async function uploadsContext(uploads: readonly Upload[]): Promise<UploadResult<BuildContext>> {
  const entries = new Map<string, ContextEntry>();
  const blobs: Record<string, string> = {};
  let bytes = 0;
  for (const u of uploads) {
    const tar = tarBytes(u.data, 4 * CONTEXT_MAX_BYTES);
    if (!tar.ok) return tar;
    const buf = tar.value;
    const shaOf = new Map<string, string>();
    for await (const r of tarEntries(async (pos, len) => buf.subarray(pos, pos + len), buf.length)) {
      if (!r.ok) return bad(`an upload is not a valid tar: ${r.error}`);
      const e = r.value;
      const p = contextPath(u.dir, e.path);
      if (!p.ok) return p;
      if (p.value === undefined) continue;
      const mode = e.mode & 0o7777;
      if (e.type === 'dir') entries.set(p.value, { type: 'dir', path: p.value, mode });
      else if (e.type === 'symlink') entries.set(p.value, { type: 'symlink', path: p.value, target: e.linkpath || '.' });
      else if (e.type === 'file' || e.type === 'hardlink') {
        let sha: string | undefined;
        if (e.type === 'hardlink') {
          const target = contextPath(u.dir, e.linkpath);
          sha = target.ok && target.value ? shaOf.get(target.value) : undefined;
          if (!sha) return bad(`an uploaded hard link names a file not before it: ${JSON.stringify(e.linkpath.slice(0, 100))}`);
        } else {
          if ((bytes += e.size) > CONTEXT_MAX_BYTES) return bad(`the uploaded files are larger than ${CONTEXT_MAX_BYTES} bytes`);
          const data = buf.subarray(e.dataOffset, e.dataOffset + e.size);
          sha = createHash('sha256').update(data).digest('hex');
          blobs[sha] ??= data.toString('base64');
        }
        shaOf.set(p.value, sha);
        entries.set(p.value, { type: 'file', path: p.value, mode, sha256: sha });
      }
      // Devices and fifos: nothing a COPY of a build context carries.
      if (entries.size > CONTEXT_MAX_ENTRIES) return bad(`the uploads hold more than ${CONTEXT_MAX_ENTRIES} files`);
    }
  }
  return { ok: true, value: { entries: [...entries.values()], blobs } };
}
