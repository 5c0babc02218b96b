import { Readable } from 'node:stream';
import { z } from 'zod';
import { FileEntry, ListQuery, MkdirRequest, MoveRequest, PathQuery, RemoveQuery, WatchEvent, WriteQuery } from '@forkd/protocol';
import { NDJSON_HEADERS, ndjsonStream } from '../../../shared/ndjson-stream.js';
import { list, none, ok, param, route, view as v } from './route.js';

/** `true` and `1` are yes in query flags. */
const flag = (s: string | undefined) => s === 'true' || s === '1';

/** Files: read and write (streamed), list, stat, make, move, remove, watch. */
export const FILE_ROUTES = [
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/files',
    summary: 'Download a file',
    query: PathQuery,
    rawResponse: true,
    handler: async (c, _deps, input) => {
      const { path } = input.query();
      const f = await v(c).readFile(param(c, 'id'), path);
      const body = Readable.toWeb(Readable.from(f.chunks)) as ReadableStream<Uint8Array>;
      return c.body(body, 200, { 'content-type': 'application/octet-stream', 'content-length': String(f.size) });
    },
  }),
  route({
    method: 'put',
    path: '/v1/sandboxes/:id/files',
    summary: 'Upload a file (streamed)',
    query: WriteQuery,
    rawBody: true,
    response: ok(z.object({ path: z.string(), size: z.number() }), 201),
    handler: async (c, _deps, input) => {
      const q = input.query();
      const body = c.req.raw.body;
      const source: AsyncIterable<Uint8Array> | Uint8Array = body ? (body as unknown as AsyncIterable<Uint8Array>) : new Uint8Array(0);
      const size = await v(c).writeFile(param(c, 'id'), q.path, source, { mode: q.mode, append: flag(q.append), user: q.user, metadata: q.metadata, metadataScope: q.metadataScope });
      return c.json({ path: q.path, size }, 201);
    },
  }),
  route({
    method: 'delete',
    path: '/v1/sandboxes/:id/files',
    summary: 'Remove a file or directory',
    query: RemoveQuery,
    response: none,
    handler: async (c, _deps, input) => {
      const q = input.query();
      await v(c).remove(param(c, 'id'), q.path, flag(q.recursive));
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/files/list',
    summary: 'List a directory',
    query: ListQuery,
    response: ok(list('entries', FileEntry)),
    handler: async (c, _deps, input) => {
      const q = input.query();
      return c.json({ entries: await v(c).listDir(param(c, 'id'), q.path, q.depth) });
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/files/stat',
    summary: 'Stat a path',
    query: PathQuery,
    response: ok(FileEntry),
    handler: async (c, _deps, input) => {
      const { path } = input.query();
      return c.json(await v(c).stat(param(c, 'id'), path));
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/files/mkdir',
    summary: 'Make a directory (and parents)',
    body: MkdirRequest,
    response: none,
    handler: async (c, _deps, input) => {
      const r = await input.body();
      c.set('target', r.path);
      await v(c).mkdir(param(c, 'id'), r.path, r.user);
    },
  }),
  route({
    method: 'post',
    path: '/v1/sandboxes/:id/files/move',
    summary: 'Move or rename',
    body: MoveRequest,
    response: none,
    handler: async (c, _deps, input) => {
      const r = await input.body();
      c.set('target', `${r.from} -> ${r.to}`);
      await v(c).move(param(c, 'id'), r.from, r.to);
    },
  }),
  route({
    method: 'get',
    path: '/v1/sandboxes/:id/files/watch',
    summary: 'Watch a directory; events stream as NDJSON',
    query: RemoveQuery,
    ndjson: WatchEvent,
    handler: async (c, _deps, input) => {
      const q = input.query();
      let w: { close(): void } | undefined;
      const out = ndjsonStream(() => w?.close());
      w = await v(c).watch(param(c, 'id'), q.path, flag(q.recursive), (e) => out.write(e));
      return c.body(out.stream, 200, NDJSON_HEADERS);
    },
  }),
];
