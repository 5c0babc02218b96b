import { constants as osConstants } from 'node:os';
import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import {
  CreateSandboxRequest,
  CreateSnapshotRequest,
  ForkdError,
  ForkRequest,
  ImportSnapshotRequest,
  ImportTemplateRequest,
  PauseRequest,
  ResumeRequest,
  ListQuery,
  MkdirRequest,
  MoveRequest,
  parseProcessSelector,
  PathQuery,
  PinRequest,
  RemoveQuery,
  RewindRequest,
  SetCredentialsRequest,
  SetTimeoutRequest,
  type SetNetworkRequest,
  SignalRequest,
  StdinRequest,
  WriteQuery,
} from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { ProcessSelector } from '../node-contract/node-types.js';
import { jsonOf, validate } from './node-validate.js';

export function selectorParam(c: Context): ProcessSelector {
  const sel = parseProcessSelector(c.req.param('sel') ?? '');
  if (!sel) throw new ForkdError('INVALID_ARGUMENT', 'process selector must be a pid or tag:<tag>');
  return sel;
}

const flag = (v: string | undefined) => v === 'true' || v === '1';

/** The node contract's unary calls: JSON in, JSON out (see node-http-server.ts for the whole wire format). */
export function mountNodeRoutes(app: Hono, node: NodeService): void {
  app.post('/sandboxes', async (c) => c.json(await node.create(validate(CreateSandboxRequest, await jsonOf(c))), 201));
  app.get('/sandboxes', async (c) => c.json({ sandboxes: await node.list() }));
  app.get('/sandboxes/:id', async (c) => c.json(await node.get(c.req.param('id'))));
  app.delete('/sandboxes/:id', async (c) => {
    await node.delete(c.req.param('id'));
    return c.body(null, 204);
  });
  app.post('/sandboxes/:id/timeout', async (c) => c.json(await node.setTimeout(c.req.param('id'), validate(SetTimeoutRequest, await jsonOf(c)).timeoutSeconds)));
  // Checked by the manager, which words a domain rule's refusal.
  app.put('/sandboxes/:id/network', async (c) => c.json(await node.setNetwork(c.req.param('id'), (await jsonOf(c)) as SetNetworkRequest)));
  app.put('/sandboxes/:id/credentials', async (c) => {
    await node.setCredentials(c.req.param('id'), validate(SetCredentialsRequest, await jsonOf(c)).credentials);
    return c.body(null, 204);
  });
  app.get('/sandboxes/:id/metrics', async (c) => c.json(await node.metrics(c.req.param('id'))));

  app.get('/sandboxes/:id/processes', async (c) => c.json({ processes: await node.listProcesses(c.req.param('id')) }));
  app.post('/sandboxes/:id/processes/:sel/signal', async (c) => {
    const { signal } = validate(SignalRequest, await jsonOf(c));
    const n = typeof signal === 'number' ? signal : (osConstants.signals as Record<string, number>)[signal];
    if (!n) throw new ForkdError('INVALID_ARGUMENT', `unknown signal ${String(signal)}`);
    await node.signal(c.req.param('id'), selectorParam(c), n);
    return c.body(null, 204);
  });
  app.post('/sandboxes/:id/processes/:sel/stdin', async (c) => {
    const r = validate(StdinRequest, await jsonOf(c));
    await node.writeStdin(c.req.param('id'), selectorParam(c), r.data !== undefined ? Buffer.from(r.data, 'base64') : undefined, r.eof ?? false);
    return c.body(null, 204);
  });

  app.get('/sandboxes/:id/files', async (c) => {
    const { path } = validate(PathQuery, c.req.query());
    const f = await node.readFile(c.req.param('id'), path);
    const body = Readable.toWeb(Readable.from(f.chunks)) as ReadableStream<Uint8Array>;
    return c.body(body, 200, { 'content-type': 'application/octet-stream', 'content-length': String(f.size) });
  });
  app.put('/sandboxes/:id/files', async (c) => {
    const q = validate(WriteQuery, c.req.query());
    const body = c.req.raw.body;
    const source: AsyncIterable<Uint8Array> | Uint8Array = body ? (body as unknown as AsyncIterable<Uint8Array>) : new Uint8Array(0);
    const size = await node.writeFile(c.req.param('id'), q.path, source, { mode: q.mode, append: flag(q.append), user: q.user, metadata: q.metadata, metadataScope: q.metadataScope });
    return c.json({ size }, 201);
  });
  app.delete('/sandboxes/:id/files', async (c) => {
    const q = validate(RemoveQuery, c.req.query());
    await node.remove(c.req.param('id'), q.path, flag(q.recursive));
    return c.body(null, 204);
  });
  app.get('/sandboxes/:id/files/list', async (c) => {
    const q = validate(ListQuery, c.req.query());
    return c.json({ entries: await node.listDir(c.req.param('id'), q.path, q.depth) });
  });
  app.get('/sandboxes/:id/files/stat', async (c) => c.json(await node.stat(c.req.param('id'), validate(PathQuery, c.req.query()).path)));
  app.post('/sandboxes/:id/files/mkdir', async (c) => {
    const r = validate(MkdirRequest, await jsonOf(c));
    await node.mkdir(c.req.param('id'), r.path, r.user);
    return c.body(null, 204);
  });
  app.post('/sandboxes/:id/files/move', async (c) => {
    const r = validate(MoveRequest, await jsonOf(c));
    await node.move(c.req.param('id'), r.from, r.to);
    return c.body(null, 204);
  });

  app.post('/sandboxes/:id/snapshots', async (c) => c.json(await node.snapshot(c.req.param('id'), validate(CreateSnapshotRequest, await jsonOf(c))), 201));
  app.get('/sandboxes/:id/snapshots', async (c) => c.json({ snapshots: await node.timeline(c.req.param('id')) }));
  app.get('/snapshots/:snap', async (c) => c.json(await node.getSnapshot(c.req.param('snap'))));
  app.delete('/snapshots/:snap', async (c) => {
    await node.deleteSnapshot(c.req.param('snap'));
    return c.body(null, 204);
  });
  app.post('/snapshots/:snap/pin', async (c) => c.json(await node.pinSnapshot(c.req.param('snap'), validate(PinRequest, await jsonOf(c)).pinned)));
  app.post('/sandboxes/:id/pause', async (c) => c.json(await node.pause(c.req.param('id'), validate(PauseRequest, await jsonOf(c)))));
  app.post('/sandboxes/:id/resume', async (c) => c.json(await node.resume(c.req.param('id'), validate(ResumeRequest, await jsonOf(c)))));
  app.post('/sandboxes/:id/rewind', async (c) => c.json(await node.rewind(c.req.param('id'), validate(RewindRequest, await jsonOf(c)).snapshot)));
  // The source is a sandbox id (a live fork) or a snapshot id.
  app.post('/fork/:source', async (c) => {
    const r = validate(ForkRequest, await jsonOf(c));
    return c.json({ sandboxes: await node.fork(c.req.param('source'), r.count, undefined, { metadata: r.metadata, env: r.env }) }, 201);
  });
  app.get('/sandboxes/:id/tree', async (c) => c.json(await node.tree(c.req.param('id'))));
  app.post('/snapshots/:snap/export', async (c) => c.json(await node.exportSnapshot(c.req.param('snap'))));
  app.post('/snapshot-imports', async (c) => {
    const r = validate(ImportSnapshotRequest, await jsonOf(c));
    return c.json(await node.importSnapshot(r.manifest, { asSandbox: r.asSandbox }), 201);
  });

  app.get('/templates', async (c) => c.json({ templates: await node.templates() }));
  app.delete('/templates/:name', async (c) => {
    await node.deleteTemplate(c.req.param('name'));
    return c.body(null, 204);
  });
  app.post('/templates/:name/export', async (c) => c.json(await node.exportTemplate(c.req.param('name'))));
  app.post('/template-imports', async (c) => c.json(await node.importTemplate(validate(ImportTemplateRequest, await jsonOf(c)).manifest), 201));
  app.get('/stats', async (c) => c.json(await node.stats()));
}
