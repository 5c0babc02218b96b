import type { IncomingMessage, ServerResponse } from 'node:http';
import { posix } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ForkdError, toForkdError } from '@forkd/protocol';
import type { EnvdCall } from './envd-call.js';
import { resolvePath } from './envd-paths.js';
import { publicError } from '../http/public-error.js';
import { boundaryOf, MultipartError, multipartParts } from './multipart.js';
import { E2B_METADATA_SCOPE, e2bMetadata, uploadMetadata } from './e2b-file-metadata.js';

/** envd's plain-HTTP `/files`: download (GET) and upload (POST, multipart or raw), over the node's file calls. */

export class FilesError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const b = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': b.length });
  res.end(b);
}

/** A failure as envd's `{code, message}` with the status the SDK maps (507 for a full disk). */
export function filesFailure(err: unknown, requestId: string): { status: number; message: string } {
  if (err instanceof FilesError) return { status: err.status, message: err.message };
  // The client's gzip is the client's mistake, not the server's.
  if (typeof (err as { code?: unknown })?.code === 'string' && /^Z_/.test((err as { code: string }).code)) return { status: 400, message: 'the body is not valid gzip' };
  const fe = toForkdError(err);
  if (fe.details?.errno === 'ENOSPC' || fe.details?.errno === 28 || fe.details?.errno === 'EDQUOT') return { status: 507, message: 'not enough disk space available' };
  const status = fe.code === 'FAILED_PRECONDITION' ? 400 : fe.status;
  return { status, message: publicError(fe, requestId, false).message };
}

async function statOrUndefined(call: EnvdCall, path: string) {
  try {
    return await call.view.stat(call.id, path);
  } catch (err) {
    if (err instanceof ForkdError && err.code === 'NOT_FOUND') return undefined;
    throw err;
  }
}

export async function download(call: EnvdCall, q: URLSearchParams, res: ServerResponse): Promise<void> {
  const path = resolvePath(q.get('path') ?? '', call.user);
  call.target = path;
  const st = await statOrUndefined(call, path);
  if (!st) throw new FilesError(404, `path '${path}' does not exist`);
  if (st.type === 'dir') throw new FilesError(400, `path '${path}' is a directory`);
  const file = await call.view.readFile(call.id, path);
  res.writeHead(200, {
    'content-type': 'application/octet-stream',
    'content-length': file.size,
    'content-disposition': `inline; filename=${encodeURIComponent(posix.basename(path))}`,
    vary: 'Accept-Encoding',
  });
  for await (const chunk of file.chunks) {
    if (res.destroyed) return;
    if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
  }
  res.end();
}

type Written = { name: string; type: 'file'; path: string; metadata?: Record<string, string> };

/**
 * One file: the target must not be a directory; written 0644, owned by the
 * request user (parents made as needed), its E2B metadata replaced by
 * `metadata`. The answer carries the metadata read back, as envd's does (a
 * file system without xattrs stores none, and then shows none).
 */
async function writeOne(call: EnvdCall, path: string, data: AsyncIterable<Uint8Array>, metadata: Record<string, string>): Promise<Written> {
  call.target = path;
  const st = await statOrUndefined(call, path);
  if (st?.type === 'dir') throw new FilesError(400, `path is a directory: ${path}`);
  await call.view.writeFile(call.id, path, data, { user: call.user, mode: 0o644, metadata, metadataScope: E2B_METADATA_SCOPE });
  const stored = Object.keys(metadata).length ? e2bMetadata((await statOrUndefined(call, path))?.metadata) : {};
  return { name: posix.basename(path), type: 'file', path, ...(Object.keys(stored).length ? { metadata: stored } : {}) };
}

export async function upload(call: EnvdCall, q: URLSearchParams, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // envd 0.6.2+: checked before anything is written, so a refused upload creates no file.
  const metadata = uploadMetadata(req.headers, req.headersDistinct);
  if (typeof metadata === 'string') throw new FilesError(400, `invalid metadata: ${metadata}`);
  let body: Readable = req;
  if ((req.headers['content-encoding'] ?? '').toLowerCase() === 'gzip') {
    // pipeline, not pipe: a client that goes away mid-body ends the upload instead of leaving it waiting.
    const gunzip = createGunzip();
    pipeline(req, gunzip, () => {});
    body = gunzip;
  }
  const ct = req.headers['content-type'] ?? '';
  const qpath = q.get('path') || undefined;
  if (/^multipart\/form-data/i.test(ct)) {
    const boundary = boundaryOf(ct);
    if (!boundary) throw new FilesError(400, 'multipart/form-data without a boundary');
    // Streamed part by part: each file goes to the sandbox as it arrives.
    const seen = new Set<string>();
    const out: Written[] = [];
    try {
      for await (const part of multipartParts(body, boundary)) {
        if (part.name !== 'file') continue;
        const path = resolvePath(qpath ?? part.filename ?? '', call.user);
        if (seen.has(path)) throw new FilesError(400, `you cannot upload multiple files to the same path '${path}' in one upload request, only the last specified one will be uploaded`);
        seen.add(path);
        out.push(await writeOne(call, path, part.body, metadata));
      }
    } catch (err) {
      if (err instanceof MultipartError) throw new FilesError(400, err.message);
      throw err;
    }
    if (!out.length) throw new FilesError(400, 'no file part in the upload');
    sendJson(res, 200, out);
    return;
  }
  if (!/^application\/octet-stream/i.test(ct)) throw new FilesError(400, `unsupported content type: ${ct}, expected multipart/form-data or application/octet-stream`);
  if (!qpath) throw new FilesError(400, 'path query parameter is required for raw body upload');
  sendJson(res, 200, [await writeOne(call, resolvePath(qpath, call.user), body, metadata)]);
}
