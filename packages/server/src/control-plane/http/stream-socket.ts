import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket, type RawData } from 'ws';
import { ForkdError, SANDBOX_ID_SOURCE, toForkdError } from '@forkd/protocol';
import { presentedKey, type Principal } from '../auth/api-keys.js';
import type { AppDeps } from './app.js';
import { spawnOptions, type WaitingCall } from '../../node-contract/index.js';
import { signalNumber } from './process-request.js';
import { headerOf, refuseUpgrade, requestUrl } from './raw-http.js';
import { callerView } from './caller-view.js';
import { logRequestError, newRequestId, publicError } from './public-error.js';
import { withContext } from '../../shared/request-context.js';
import { destroyQuietly, guardListener } from '../../shared/connection-guard.js';
import { parseControl, parseOpen, rawBytes } from './stream-messages.js';
import { StdinFlow } from './stdin-flow.js';
import type { OpenStreams } from '../../shared/open-streams.js';

const PATH = new RegExp(`^/v1/sandboxes/(${SANDBOX_ID_SOURCE})/stream$`);

/** What a socket may hold of messages that arrive before its process has started. */
const MAX_EARLY_BYTES = 1024 * 1024;
const MAX_EARLY_MESSAGES = 1024;
/** What a socket may hold of output its client has not read yet. */
const MAX_BUFFERED = 1024 * 1024;
/** What a socket may have of stdin handed on and not yet taken by the process (then it is not read). */
export const MAX_STDIN_IN_FLIGHT = 1024 * 1024;

function rawLength(d: RawData): number {
  return Array.isArray(d) ? d.reduce((n, b) => n + b.length, 0) : d instanceof ArrayBuffer ? d.byteLength : d.length;
}

export const STREAM_STDOUT = 1;
export const STREAM_STDERR = 2;

/**
 * Interactive processes over WebSocket (`/v1/sandboxes/{id}/stream`): PTY
 * sessions and execs with live stdin. Binary frames carry data (server→client
 * prefixed by a stream byte), text frames carry JSON control messages.
 */
/**
 * The handlers that send a socket's output and events. Output waits for
 * `started` (`opened`): a client counts its position from the offset that
 * `started` gives (see the protocol's ResumePoint). Back-pressure: past
 * 1 MiB buffered, the next guest frame waits until this message is written
 * out to the kernel (ws calls back then), so a client that does not read
 * stops the process's output (the guest's ring keeps it) instead of growing
 * the daemon's memory.
 */
function socketHandlers(ws: WebSocket, gone: Promise<void>, abort: AbortSignal) {
  let opened!: () => void;
  const started = new Promise<void>((r) => (opened = r));
  const after = (f: () => Promise<void> | void) => started.then(f);
  const send = (stream: number) => (d: Buffer) =>
    after(() => {
      const frame = Buffer.concat([Buffer.from([stream]), d]);
      if (ws.readyState !== ws.OPEN) return undefined;
      if (ws.bufferedAmount + frame.length <= MAX_BUFFERED) {
        ws.send(frame);
        return undefined;
      }
      return Promise.race([new Promise<void>((r) => ws.send(frame, () => r())), gone]);
    });
  const json = (msg: object) => after(() => ws.send(JSON.stringify(msg)));
  const handlers = {
    onStdout: send(STREAM_STDOUT),
    onStderr: send(STREAM_STDERR),
    onDropped: (n: number) => json({ type: 'dropped', bytes: n }),
    onRewound: () => json({ type: 'rewound' }),
    onPosition: (offset: number) => json({ type: 'position', offset }),
    // Policy: held for approval (before `started`), or ended by a limit. Clients that do not know them ignore them.
    onWaiting: (w: WaitingCall) => ws.send(JSON.stringify({ type: 'waiting', ...w })),
    onLimit: (l: { limit: string; rule: string }) => json({ type: 'limit', ...l }),
    abort,
  };
  return { handlers, opened };
}

export function attachStreamSocket({ svc, control, logger, streams }: AppDeps & { streams: OpenStreams }): (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  wss.on('connection', (ws: WebSocket, id: string, who: Principal) => {
    // A bad frame (unmasked, too large, a bad opcode) is an 'error' on the socket: without a listener, a throw.
    const close = () => ws.terminate();
    ws.on('error', guardListener('websocket', close, close));
    guardListener('websocket', close, () => handle(ws, id, who, close))();
  });

  /** The error as this caller may see it, logged whole under the connection's request id. */
  function shown(err: unknown, who: Principal, requestId: string, sandbox: string) {
    logRequestError(logger, err, { requestId, method: 'WS', path: `/v1/sandboxes/${sandbox}/stream`, tenant: who.tenant, keyId: who.keyId });
    return publicError(err, requestId, who.admin);
  }

  function sendError(ws: WebSocket, err: unknown, who: Principal, requestId: string, sandbox: string) {
    ws.send(JSON.stringify({ type: 'error', error: shown(err, who, requestId, sandbox) }));
    ws.close(1011);
  }

  function handle(ws: WebSocket, id: string, who: Principal, close: () => void) {
    const requestId = newRequestId();
    const view = callerView(svc, control, who);
    // Messages that arrive while the process is still being started are kept, not lost.
    // Bounded by bytes, not count: 256 messages of 1 MiB each would be 256 MiB per socket.
    let onMessage: ((data: RawData, binary: boolean) => void) | undefined;
    const early: Array<[RawData, boolean]> = [];
    let earlyBytes = 0;
    let opened = false;
    ws.on('message', guardListener('websocket', close, (data: RawData, binary: boolean) => {
      if (!opened) {
        opened = true;
        // The stream's calls log under its request id, as a REST call's do.
        return withContext({ requestId }, () => open(data, binary));
      } else if (onMessage) onMessage(data, binary);
      else {
        earlyBytes += rawLength(data);
        if (earlyBytes <= MAX_EARLY_BYTES && early.length < MAX_EARLY_MESSAGES) early.push([data, binary]);
        else if (ws.readyState === ws.OPEN) {
          early.length = 0;
          ws.close(1008, `more than ${MAX_EARLY_BYTES} bytes or ${MAX_EARLY_MESSAGES} messages before start`);
        }
      }
    }));
    // Resolves when the socket is gone: a sender waiting for room must not wait for ever.
    const gone = new Promise<void>((r) => ws.once('close', () => r()));
    // A call still waiting for approval when the socket closes is dropped (nothing runs).
    const closed = new AbortController();
    void gone.then(() => closed.abort());

    async function open(raw: RawData, isBinary: boolean) {
      const t0 = performance.now();
      let target: string | undefined;
      let audited = false;
      const audit = (err?: unknown) => {
        audited = true;
        const fe = err === undefined ? undefined : toForkdError(err);
        void control.store
          .appendAudit({ at: new Date().toISOString(), keyId: who.keyId, tenant: who.tenant, sandboxId: id, operation: 'WS /v1/sandboxes/:id/stream', ...(target ? { target } : {}), code: fe?.code ?? 'OK', status: fe?.status ?? 101, durationMs: Math.round(performance.now() - t0), requestId })
          .catch((e: unknown) => logger.warn('stream call not audited', { requestId, error: String(e) }));
      };
      try {
        const opening = parseOpen(rawBytes(raw), isBinary);
        if (!opening.ok) throw opening.error;
        const req = opening.value;
        target = req.op === 'spawn' ? (req.spawn.cmd?.join(' ') ?? req.spawn.command) : `attach ${req.pid ?? `tag:${req.tag}`}`;
        const { handlers, opened } = socketHandlers(ws, gone, closed.signal);
        let started;
        if (req.op === 'spawn') {
          started = await view.spawn(id, spawnOptions({ ...req.spawn, stdin: true }), handlers);
        } else {
          started = await view.attach(id, req.pid !== undefined ? { pid: req.pid } : { tag: req.tag! }, handlers, req.resume);
        }
        const { process, exit } = started;
        audit();
        if (ws.readyState !== ws.OPEN) {
          process.detach();
          return;
        }
        ws.send(JSON.stringify({ type: 'started', pid: process.pid, tag: process.tag, pty: process.pty, ...process.resume }));
        opened();
        // A stopping daemon lets go of the process and says so (1012): the client resumes from the next one.
        let stopping = false;
        const unregister = streams.add(() => {
          stopping = true;
          process.detach({ hold: true });
        });
        const stdin = new StdinFlow(process, ws, MAX_STDIN_IN_FLIGHT);
        onMessage = (data: RawData, binary: boolean) => {
          const buf = rawBytes(data);
          if (binary) return stdin.write(buf);
          const msg = parseControl(buf);
          try {
            if (!msg.ok) throw msg.error;
            if (msg.value.type === 'stdin_eof') stdin.eof();
            else if (msg.value.type === 'resize') process.resize(msg.value.cols, msg.value.rows);
            else process.signal(signalNumber(msg.value.signal));
          } catch (err) {
            ws.send(JSON.stringify({ type: 'error', error: shown(toForkdError(err), who, requestId, id) }));
          }
        };
        for (const [d, b] of early.splice(0)) onMessage(d, b);
        ws.on('close', guardListener('websocket', () => {}, () => process.detach()));
        const e = await exit.finally(unregister);
        if (e) ws.send(JSON.stringify({ type: 'exit', exitCode: e.exitCode, signal: e.signal, oomKilled: e.oomKilled }));
        ws.close(stopping ? 1012 : 1000, stopping ? 'forkd is restarting' : undefined);
      } catch (err) {
        if (!audited) audit(err);
        sendError(ws, err, who, requestId, id);
      }
    }
  }

  return (req, socket, head) => {
    const url = requestUrl(req, 'http://localhost');
    const m = url && PATH.exec(url.pathname);
    if (!m) return false;
    const close = () => destroyQuietly(socket);
    control.keys.authenticate(presentedKey((n) => headerOf(req, n), url!.searchParams), req.socket.remoteAddress ?? 'unknown').then(
      guardListener('websocket', close, (who: Principal) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, m[1], who))),
      guardListener('websocket', close, (err: unknown) => refuseUpgrade(socket, err, logger, req.url)),
    );
    return true;
  };
}
