import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket, type RawData } from 'ws';
import { z } from 'zod';
import { ForkdError, SpawnRequest, TAG_PATTERN, toForkdError } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import { signalNumber, spawnOptions } from './app.js';
import type { SandboxService } from './sandbox-service.js';
import { validate } from './validate.js';

const PATH = /^\/v1\/sandboxes\/(sbx-[a-z0-9]{12})\/stream$/;

const Open = z.union([
  z.object({ op: z.literal('spawn'), spawn: SpawnRequest }),
  z.object({ op: z.literal('attach'), pid: z.number().int().positive().optional(), tag: z.string().regex(TAG_PATTERN).optional() }),
]);
const Control = z.discriminatedUnion('type', [
  z.object({ type: z.literal('stdin_eof') }),
  z.object({ type: z.literal('resize'), cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) }),
  z.object({ type: z.literal('signal'), signal: z.union([z.number().int().min(1).max(64), z.string().max(16)]) }),
]);

export const STREAM_STDOUT = 1;
export const STREAM_STDERR = 2;

/**
 * Interactive processes over WebSocket (`/v1/sandboxes/{id}/stream`): PTY
 * sessions and execs with live stdin. Binary frames carry data (server→client
 * prefixed by a stream byte), text frames carry JSON control messages.
 */
export function attachStreamSocket(svc: SandboxService, logger: Logger): (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  wss.on('connection', (ws: WebSocket, id: string) => handle(ws, id));

  function sendError(ws: WebSocket, err: unknown) {
    const fe = toForkdError(err);
    ws.send(JSON.stringify({ type: 'error', error: { code: fe.code, message: fe.message } }));
    ws.close(1011);
  }

  function handle(ws: WebSocket, id: string) {
    // Messages that arrive while the process is still being started are kept, not lost.
    let onMessage: ((data: RawData, binary: boolean) => void) | undefined;
    const early: Array<[RawData, boolean]> = [];
    let opened = false;
    ws.on('message', (data: RawData, binary: boolean) => {
      if (!opened) {
        opened = true;
        void open(data, binary);
      } else if (onMessage) onMessage(data, binary);
      else if (early.length < 256) early.push([data, binary]);
      else ws.close(1008, 'too many messages before start');
    });

    async function open(raw: RawData, isBinary: boolean) {
      try {
        if (isBinary) throw new ForkdError('INVALID_ARGUMENT', 'first message must be a JSON open request');
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw.toString());
        } catch {
          throw new ForkdError('INVALID_ARGUMENT', 'open request is not valid JSON');
        }
        const req = validate(Open, parsed);
        const send = (stream: number) => (d: Buffer) => {
          ws.send(Buffer.concat([Buffer.from([stream]), d]));
          // Back-pressure: wait while the socket's buffer is large.
          if (ws.bufferedAmount > 1024 * 1024) return new Promise<void>((r) => setTimeout(r, 10));
        };
        const handlers = { onStdout: send(STREAM_STDOUT), onStderr: send(STREAM_STDERR), onDropped: (n: number) => ws.send(JSON.stringify({ type: 'dropped', bytes: n })) };
        let started;
        if (req.op === 'spawn') {
          started = await svc.spawn(id, spawnOptions({ ...req.spawn, stdin: true }), handlers);
        } else {
          if ((req.pid === undefined) === (req.tag === undefined)) throw new ForkdError('INVALID_ARGUMENT', 'attach needs exactly one of pid or tag');
          started = await svc.attach(id, req.pid !== undefined ? { pid: req.pid } : { tag: req.tag! }, handlers);
        }
        const { process, exit } = started;
        if (ws.readyState !== ws.OPEN) {
          process.detach();
          return;
        }
        ws.send(JSON.stringify({ type: 'started', pid: process.pid, tag: process.tag, pty: process.pty }));
        onMessage = (data: RawData, binary: boolean) => {
          const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
          if (binary) {
            void process.write(buf).catch(() => {});
            return;
          }
          try {
            const msg = validate(Control, JSON.parse(buf.toString()));
            if (msg.type === 'stdin_eof') process.closeStdin();
            else if (msg.type === 'resize') process.resize(msg.cols, msg.rows);
            else process.signal(signalNumber(msg.signal));
          } catch (err) {
            const fe = err instanceof SyntaxError ? new ForkdError('INVALID_ARGUMENT', 'control message is not valid JSON') : toForkdError(err);
            ws.send(JSON.stringify({ type: 'error', error: { code: fe.code, message: fe.message } }));
          }
        };
        for (const [d, b] of early.splice(0)) onMessage(d, b);
        ws.on('close', () => process.detach());
        const e = await exit;
        if (e) ws.send(JSON.stringify({ type: 'exit', exitCode: e.exitCode, signal: e.signal, oomKilled: e.oomKilled }));
        ws.close(1000);
      } catch (err) {
        if (toForkdError(err).code === 'INTERNAL') logger.error('stream failed', { sandbox: id, error: String(err) });
        sendError(ws, err);
      }
    }
  }

  return (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const m = PATH.exec(url.pathname);
    if (!m) return false;
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, m[1]));
    return true;
  };
}
