import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { PassThrough } from 'node:stream';
import { ForkdError, type SandboxInfo, type WatchEvent } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { OutputHandlers, PortConnection, ProcessHandle } from '../node-contract/node-types.js';
import { silentLogger } from '../shared/logger.js';
import { NodeHttpClient } from './node-http-client.js';
import { listenNode } from './node-http-server.js';
import { sandboxInfo } from '../testing/sandbox-info.js';

const info = (id: string): SandboxInfo => sandboxInfo(id);

/** What the fake node saw, for the tests to check. */
const seen = { deleted: [] as string[], ops: [] as string[], detached: 0, held: 0, written: Buffer.alloc(0) };
const files = new Map<string, Buffer>();
let echo: net.Server;

/** A node with just what these tests call; anything else is NOT_IMPLEMENTED (a Proxy). */
const impl: Partial<NodeService> = {
  async get(id) {
    if (id !== 'sbx-aaaaaaaaaaaa') throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`, { errno: 'ENOENT' });
    return info(id);
  },
  async create() {
    return info('sbx-bbbbbbbbbbbb');
  },
  async fork(_source, count) {
    return Array.from({ length: count }, (_, i) => info(`sbx-cccccccccc${i}${i}`));
  },
  async delete(id) {
    seen.deleted.push(id);
  },
  async spawn(_id, opts, h: OutputHandlers = {}) {
    if (opts.argv[0] === 'slow') await new Promise((r) => setTimeout(r, 150));
    let exited!: (e: { exitCode: number; signal: number; oomKilled: boolean } | null) => void;
    let produced!: () => void;
    const output = new Promise<void>((r) => (produced = r));
    const exit = new Promise<{ exitCode: number; signal: number; oomKilled: boolean } | null>((r) => (exited = r));
    const process: ProcessHandle = {
      pid: 42,
      tag: opts.tag,
      pty: false,
      async write(d) {
        seen.ops.push(`write:${d.toString()}`);
      },
      closeStdin() {
        seen.ops.push('eof');
        void output.then(() => exited({ exitCode: 3, signal: 0, oomKilled: false }));
      },
      signal(n) {
        seen.ops.push(`signal:${n}`);
      },
      resize() {},
      detach(o) {
        seen.detached++;
        if (o?.hold) seen.held++;
        exited(null);
      },
    };
    void (async () => {
      await new Promise((r) => setTimeout(r, 10));
      await h.onStdout?.(Buffer.from(opts.argv.join(' ')));
      await h.onStderr?.(Buffer.from([0xff, 0x00, 0x80]));
      produced();
      if (opts.argv[0] === 'quick') exited({ exitCode: 0, signal: 0, oomKilled: true });
      if (opts.argv[0] === 'rewound') throw new Error('unreachable');
    })().catch(() => exited(null));
    return { process, exit: opts.argv[0] === 'gone' ? Promise.reject(new ForkdError('REWOUND', 'process 42 is gone')) : exit };
  },
  async readFile(_id, path) {
    const b = files.get(path);
    if (!b) throw new ForkdError('NOT_FOUND', `no such file ${path}`);
    return {
      size: b.length,
      chunks: (async function* () {
        for (let i = 0; i < b.length; i += 100_000) yield b.subarray(i, i + 100_000);
      })(),
    };
  },
  async writeFile(_id, path, data) {
    const parts: Buffer[] = [];
    if (data instanceof Uint8Array) parts.push(Buffer.from(data));
    else for await (const c of data) parts.push(Buffer.from(c));
    files.set(path, Buffer.concat(parts));
    return files.get(path)!.length;
  },
  async watch(_id, _path, _recursive, onEvent) {
    let stop!: () => void;
    const done = new Promise<void>((r) => (stop = r));
    void (async () => {
      await onEvent({ type: 'create', name: 'a' });
      await onEvent({ type: 'write', name: 'a' });
    })();
    return { close: () => stop(), done };
  },
  async connectPort(_id, port): Promise<PortConnection> {
    if (port === 1) {
      const stream = new PassThrough();
      stream.end();
      return { stream, done: Promise.resolve({ refused: true, error: 'nothing listens' }), close() {} };
    }
    const sock = net.connect((echo.address() as net.AddressInfo).port, '127.0.0.1');
    const done = new Promise<{ refused: boolean }>((r) => sock.once('close', () => r({ refused: false })));
    return { stream: sock, done, close: () => sock.destroy() };
  },
  async exportSnapshot(snapId) {
    return { manifest: `snapshots/${snapId}/manifest.json`, bytesUploaded: 7 };
  },
  async importSnapshot(manifest, opts) {
    seen.ops.push(`import:${manifest}:${String(opts?.asSandbox)}`);
    return { id: 'snap-aaaaaaaaaaaa', sandboxId: 'sbx-aaaaaaaaaaaa', createdAt: new Date(0).toISOString(), frozenMs: 1, sizeBytes: 2, pinned: false, reason: 'pause' };
  },
  async buildTemplate(req, progress, claim) {
    await progress('step 1');
    await claim?.('sbx-dddddddddddd');
    await progress('step 2');
    return { name: req.name, createdAt: new Date(0).toISOString() } as never;
  },
};
const fake = new Proxy(impl, {
  get: (t, k) => (t as Record<string | symbol, unknown>)[k] ?? (async () => Promise.reject(new ForkdError('NOT_IMPLEMENTED', String(k)))),
}) as NodeService;

echo = net.createServer((s) => s.pipe(s));
await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
const server = await listenNode({ node: fake, token: 'fnt_secret', logger: silentLogger }, '127.0.0.1', 0);
const client = new NodeHttpClient({ url: server.url, token: 'fnt_secret' });
after(async () => {
  client.close();
  await server.close();
  echo.close();
});

test('errors keep their code, message and details across the wire', async () => {
  assert.equal((await client.get('sbx-aaaaaaaaaaaa')).id, 'sbx-aaaaaaaaaaaa');
  await assert.rejects(client.get('sbx-zzzzzzzzzzzz'), (e: ForkdError) => e instanceof ForkdError && e.code === 'NOT_FOUND' && e.message === 'sandbox sbx-zzzzzzzzzzzz not found' && e.details?.errno === 'ENOENT');
  await assert.rejects(client.stats(), { code: 'NOT_IMPLEMENTED' });
  await assert.rejects(client.create({ memoryMb: 1 }), { code: 'INVALID_ARGUMENT' });
});

test('a wrong or missing token is UNAUTHENTICATED, an unreachable node UNAVAILABLE', async () => {
  const wrong = new NodeHttpClient({ url: server.url, token: 'fnt_other' });
  await assert.rejects(wrong.get('sbx-aaaaaaaaaaaa'), { code: 'UNAUTHENTICATED' });
  await assert.rejects(wrong.connectPort('sbx-aaaaaaaaaaaa', 80), { code: 'UNAUTHENTICATED' });
  wrong.close();
  const res = await fetch(`${server.url}/node/v1/sandboxes`);
  assert.equal(res.status, 401);
  const gone = new NodeHttpClient({ url: 'http://127.0.0.1:9', token: 'x' });
  await assert.rejects(gone.list(), { code: 'UNAVAILABLE' });
});

test('claims come after the node answers; a failed claim deletes what was made', async () => {
  const claimed: string[] = [];
  assert.equal((await client.create({}, (id) => void claimed.push(id))).id, 'sbx-bbbbbbbbbbbb');
  assert.deepEqual(claimed, ['sbx-bbbbbbbbbbbb']);
  seen.deleted.length = 0;
  await assert.rejects(
    client.fork('sbx-aaaaaaaaaaaa', 2, async (id) => {
      if (id.endsWith('11')) throw new ForkdError('RESOURCE_EXHAUSTED', 'over quota');
    }),
    { code: 'RESOURCE_EXHAUSTED' },
  );
  assert.deepEqual(seen.deleted, ['sbx-cccccccccc00', 'sbx-cccccccccc11']);
});

test('a process stream: output bytes, handle calls in order, exit', async () => {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  seen.ops.length = 0;
  const { process, exit } = await client.spawn('sbx-aaaaaaaaaaaa', { argv: ['echo', 'hi'], tag: 't1', stdin: true }, { onStdout: (d) => void out.push(d), onStderr: (d) => void err.push(d) });
  assert.equal(process.pid, 42);
  assert.equal(process.tag, 't1');
  process.signal(10);
  void process.write(Buffer.from('one'));
  void process.write(Buffer.from('two'));
  process.closeStdin();
  assert.deepEqual(await exit, { exitCode: 3, signal: 0, oomKilled: false });
  assert.equal(Buffer.concat(out).toString(), 'echo hi');
  assert.deepEqual(Buffer.concat(err), Buffer.from([0xff, 0x00, 0x80]));
  assert.deepEqual(seen.ops, ['signal:10', 'write:one', 'write:two', 'eof']);
  const quick = await client.spawn('sbx-aaaaaaaaaaaa', { argv: ['quick'] });
  assert.deepEqual(await quick.exit, { exitCode: 0, signal: 0, oomKilled: true });
});

test('detach closes the stream: the node detaches, exit is null; a rejected exit keeps its code', async () => {
  const before = seen.detached;
  const { process, exit } = await client.spawn('sbx-aaaaaaaaaaaa', { argv: ['long'] });
  process.detach();
  assert.equal(await exit, null);
  for (let i = 0; i < 50 && seen.detached === before; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(seen.detached, before + 1);
  const gone = await client.spawn('sbx-aaaaaaaaaaaa', { argv: ['gone'] });
  await assert.rejects(gone.exit, { code: 'REWOUND', message: 'process 42 is gone' });
});

test('a held detach (a stopping control plane) asks the node to let go as for a snapshot; the stream then ends on its own with exit null', async () => {
  const before = seen.held;
  const { process, exit } = await client.spawn('sbx-aaaaaaaaaaaa', { argv: ['long'] });
  process.detach({ hold: true });
  assert.equal(await exit, null);
  assert.equal(seen.held, before + 1);
});

test('a control plane gone while its spawn was starting: the node detaches the process', async () => {
  const before = seen.detached;
  const req = http.request(`${server.url}/node/v1/sandboxes/sbx-aaaaaaaaaaaa/processes`, { method: 'POST', headers: { authorization: 'Bearer fnt_secret', 'content-type': 'application/json' } });
  req.on('error', () => {});
  req.end(JSON.stringify({ cmd: ['slow'] }));
  await new Promise((r) => setTimeout(r, 50));
  req.destroy();
  for (let i = 0; i < 100 && seen.detached === before; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(seen.detached, before + 1);
});

test('files: a 1 MB body both ways, byte for byte; a missing file is NOT_FOUND', async () => {
  const body = Buffer.alloc(1024 * 1024 + 7);
  for (let i = 0; i < body.length; i++) body[i] = (i * 7919) & 0xff;
  assert.equal(await client.writeFile('sbx-aaaaaaaaaaaa', '/big', body), body.length);
  async function* parts() {
    yield body.subarray(0, 10);
    yield body.subarray(10);
  }
  assert.equal(await client.writeFile('sbx-aaaaaaaaaaaa', '/big2', parts()), body.length);
  const f = await client.readFile('sbx-aaaaaaaaaaaa', '/big2');
  assert.equal(f.size, body.length);
  const got: Buffer[] = [];
  for await (const c of f.chunks) got.push(c);
  assert.ok(Buffer.concat(got).equals(body));
  await assert.rejects(client.readFile('sbx-aaaaaaaaaaaa', '/nope'), { code: 'NOT_FOUND' });
});

test('watch delivers events in order; close ends it', async () => {
  const events: WatchEvent[] = [];
  const w = await client.watch('sbx-aaaaaaaaaaaa', '/tmp', true, (e) => void events.push(e));
  for (let i = 0; i < 50 && events.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(events, [
    { type: 'create', name: 'a' },
    { type: 'write', name: 'a' },
  ]);
  w.close();
  await w.done;
});

test('a port connection carries bytes both ways; a refusal shows in done', async () => {
  const c = await client.connectPort('sbx-aaaaaaaaaaaa', 8000);
  const got = new Promise<string>((r) => c.stream.once('data', (d: Buffer) => r(d.toString())));
  c.stream.write('ping');
  assert.equal(await got, 'ping');
  c.close();
  assert.deepEqual(await c.done, { refused: false });
  const refused = await client.connectPort('sbx-aaaaaaaaaaaa', 1);
  refused.stream.resume();
  assert.deepEqual(await refused.done, { refused: true, error: 'nothing listens' });
});

test('a template build streams progress and claims its build sandbox', async () => {
  const lines: string[] = [];
  const claimed: string[] = [];
  const t = await client.buildTemplate({ name: 'tpl', setup: ['true'] }, (l) => void lines.push(l), (id) => void claimed.push(id));
  assert.equal(t.name, 'tpl');
  assert.deepEqual(lines, ['step 1', 'step 2']);
  assert.deepEqual(claimed, ['sbx-dddddddddddd']);
});

test('snapshot export and import cross the wire; an import without a manifest key is INVALID_ARGUMENT', async () => {
  assert.deepEqual(await client.exportSnapshot('snap-aaaaaaaaaaaa'), { manifest: 'snapshots/snap-aaaaaaaaaaaa/manifest.json', bytesUploaded: 7 });
  const s = await client.importSnapshot('snapshots/snap-aaaaaaaaaaaa/manifest.json', { asSandbox: true });
  assert.equal(s.sandboxId, 'sbx-aaaaaaaaaaaa');
  await client.importSnapshot('m.json');
  assert.deepEqual(seen.ops.filter((o) => o.startsWith('import:')), ['import:snapshots/snap-aaaaaaaaaaaa/manifest.json:true', 'import:m.json:undefined']);
  await assert.rejects(client.importSnapshot(''), { code: 'INVALID_ARGUMENT' });
});
