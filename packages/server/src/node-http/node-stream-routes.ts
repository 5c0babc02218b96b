import { randomBytes } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { BuildTemplateRequest, ForkdError, NodeAttachRequest, PathQuery, SpawnRequest, toForkdError } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { OutputHandlers, ProcessHandle, ProcessStream } from '../node-contract/node-types.js';
import type { Logger } from '../shared/logger.js';
import { NDJSON_HEADERS, ndjsonStream } from '../shared/ndjson-stream.js';
import { selectorParam } from './node-routes.js';
import { intIn, jsonOf, validate } from './node-validate.js';
import { spawnOptions } from '../node-contract/spawn-options.js';
import { type BuildLine, type ProcessLine, type WatchLine } from './node-wire.js';

/** The process streams this node serves, by the id it gave each in `started`: what a handle's small POSTs reach. */
class StreamRegistry {
  readonly #streams = new Map<string, { sandbox: string; process: ProcessHandle }>();

  add(sandbox: string, process: ProcessHandle): string {
    const id = `st-${randomBytes(9).toString('base64url')}`;
    this.#streams.set(id, { sandbox, process });
    return id;
  }

  remove(id: string): void {
    this.#streams.delete(id);
  }

  get(c: Context): ProcessHandle {
    const s = this.#streams.get(c.req.param('stream') ?? '');
    if (!s || s.sandbox !== c.req.param('id') || String(s.process.pid) !== c.req.param('pid')) throw new ForkdError('NOT_FOUND', 'no such process stream (it ended or was let go)');
    return s.process;
  }
}

const errorOf = (err: unknown) => toForkdError(err).toJSON().error;

/**
 * Runs `f` when the caller's connection closes before the answer ended,
 * including while the call was still starting (before the stream was handed
 * to the connection, so its cancel would never come). Called first thing:
 * the adapter aborts the request's signal only once it was asked for.
 */
function connectionGone(c: Context): (f: () => void) => void {
  const signal = c.req.raw.signal;
  return (f) => {
    if (signal.aborted) f();
    else signal.addEventListener('abort', f, { once: true });
  };
}

/**
 * A started or attached process as an NDJSON stream. Output waits for
 * `started` (the first line, naming the stream), and every write waits for
 * the reader: back-pressure runs from the control plane to the guest. The
 * reader going away (the client's detach, or its connection lost) detaches
 * the process, which keeps running.
 */
async function processStream(c: Context, registry: StreamRegistry, logger: Logger, start: (h: OutputHandlers) => Promise<ProcessStream>): Promise<Response> {
  const sandbox = c.req.param('id') ?? '';
  const gone = connectionGone(c);
  let detach = () => {};
  const out = ndjsonStream(() => detach());
  let opened!: () => void;
  const started = new Promise<void>((r) => (opened = r));
  const line = async (l: ProcessLine) => {
    await started;
    await out.write(l);
  };
  const { process, exit } = await start({
    onStdout: (d) => line({ type: 'stdout', data: d.toString('base64') }),
    onStderr: (d) => line({ type: 'stderr', data: d.toString('base64') }),
    onDropped: (n) => line({ type: 'dropped', bytes: n }),
    onRewound: () => line({ type: 'rewound' }),
    onPosition: (offset) => line({ type: 'position', offset }),
  });
  const stream = registry.add(sandbox, process);
  detach = () => process.detach();
  void out.write({ type: 'started', pid: process.pid, ...(process.tag ? { tag: process.tag } : {}), pty: process.pty, stream, ...process.resume } satisfies ProcessLine);
  opened();
  gone(out.abandon);
  void (async () => {
    try {
      const e = await exit;
      await out.write((e ? { type: 'exit', exitCode: e.exitCode, signal: e.signal, oomKilled: e.oomKilled } : { type: 'detached' }) satisfies ProcessLine);
    } catch (err) {
      if (toForkdError(err).status >= 500) logger.warn('process stream failed', { sandbox, pid: process.pid, error: String(err) });
      await out.write({ type: 'error', error: errorOf(err) } satisfies ProcessLine);
    } finally {
      registry.remove(stream);
      out.close();
    }
  })();
  return c.body(out.stream, 200, NDJSON_HEADERS);
}

/** spawn/attach, a stream's handle, watch and template builds: the node contract's calls that stream. */
export function mountStreamRoutes(app: Hono, node: NodeService, logger: Logger): void {
  const registry = new StreamRegistry();

  app.post('/sandboxes/:id/processes', async (c) => {
    const opts = spawnOptions(validate(SpawnRequest, await jsonOf(c)));
    return processStream(c, registry, logger, (h) => node.spawn(c.req.param('id'), opts, h));
  });
  app.post('/sandboxes/:id/processes/:sel/attach', async (c) => {
    const sel = selectorParam(c);
    const { resume } = validate(NodeAttachRequest, await jsonOf(c));
    return processStream(c, registry, logger, (h) => node.attach(c.req.param('id'), sel, h, resume));
  });

  const handle = '/sandboxes/:id/processes/:pid/streams/:stream';
  app.post(`${handle}/write`, async (c) => {
    const p = registry.get(c);
    await p.write(Buffer.from(await c.req.arrayBuffer()));
    return c.body(null, 204);
  });
  app.post(`${handle}/eof`, (c) => {
    registry.get(c).closeStdin();
    return c.body(null, 204);
  });
  app.post(`${handle}/signal`, async (c) => {
    const p = registry.get(c);
    p.signal(intIn((await jsonOf(c) as { signal?: unknown }).signal, 1, 64, 'signal'));
    return c.body(null, 204);
  });
  app.post(`${handle}/detach`, async (c) => {
    registry.get(c).detach({ hold: (await jsonOf(c) as { hold?: unknown }).hold === true });
    return c.body(null, 204);
  });
  app.post(`${handle}/resize`, async (c) => {
    const p = registry.get(c);
    const r = (await jsonOf(c)) as { cols?: unknown; rows?: unknown };
    p.resize(intIn(r.cols, 1, 1000, 'cols'), intIn(r.rows, 1, 1000, 'rows'));
    return c.body(null, 204);
  });

  app.post('/sandboxes/:id/watch', async (c) => {
    const body = (await jsonOf(c)) as { path?: unknown; recursive?: unknown };
    const { path } = validate(PathQuery, { path: body.path });
    const gone = connectionGone(c);
    let w: { close(): void } | undefined;
    const out = ndjsonStream(() => w?.close());
    const handle = await node.watch(c.req.param('id'), path, body.recursive === true, (event) => out.write({ type: 'event', event } satisfies WatchLine));
    w = handle;
    gone(out.abandon);
    void out.write({ type: 'ready' } satisfies WatchLine);
    void handle.done.then(
      () => out.write({ type: 'end' } satisfies WatchLine),
      (err: unknown) => out.write({ type: 'error', error: errorOf(err) } satisfies WatchLine),
    ).finally(() => out.close());
    return c.body(out.stream, 200, NDJSON_HEADERS);
  });

  // Builds take minutes: progress lines stream, then `done` or `error`.
  app.post('/templates', async (c) => {
    const req = validate(BuildTemplateRequest, await jsonOf(c));
    const out = ndjsonStream(() => {});
    void node
      .buildTemplate(
        req,
        (line, step) => out.write({ type: 'progress', line, ...(step ? { step } : {}) } satisfies BuildLine),
        (id) => out.write({ type: 'claim', id } satisfies BuildLine),
      )
      .then(
        (template) => out.write({ type: 'done', template } satisfies BuildLine),
        (err: unknown) => out.write({ type: 'error', error: errorOf(err) } satisfies BuildLine),
      )
      .finally(() => out.close());
    return c.body(out.stream, 200, NDJSON_HEADERS);
  });
}
