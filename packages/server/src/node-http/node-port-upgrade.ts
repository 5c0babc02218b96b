import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { ForkdError, toForkdError } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { PortConnection } from '../node-contract/node-types.js';
import type { Logger } from '../shared/logger.js';
import { presentsToken } from './node-token.js';
import { destroyQuietly, guardListener } from '../shared/connection-guard.js';
import { closeWhenHalfClosed } from '../shared/half-closed.js';
import { NODE_PREFIX, PORT_CONNECTION_HEADER, PORT_UPGRADE } from './node-wire.js';

type PortResult = Awaited<PortConnection['done']>;

/** How long a finished connection's result waits for its client to ask for it. */
const RESULT_KEPT_MS = 60_000;

/**
 * The results of the port connections this node spliced, by the id it gave
 * each in the 101 answer. A refusal (nothing listens) shows only when the
 * relay gives up, after the upgrade; the client asks for it here once its
 * socket closes, so its `done` says `refused` as an in-process one would.
 */
export class PortResults {
  readonly #done = new Map<string, Promise<PortResult>>();

  add(done: Promise<PortResult>): string {
    const id = `pc-${randomBytes(9).toString('base64url')}`;
    this.#done.set(id, done);
    void done.finally(() => setTimeout(() => this.#done.delete(id), RESULT_KEPT_MS).unref());
    return id;
  }

  /** Waits for the connection to end; NOT_FOUND once its result was dropped. */
  async result(id: string): Promise<PortResult> {
    const d = this.#done.get(id);
    if (!d) throw new ForkdError('NOT_FOUND', `no port connection ${id}`);
    return d;
  }
}

const PORT_PATH = new RegExp(`^${NODE_PREFIX}/sandboxes/([^/?]+)/ports/([0-9]{1,5})(?:\\?|$)`);

/** A refusal before the upgrade: an ordinary HTTP answer with the error body, then the socket is closed. */
function refuse(socket: Duplex, err: unknown): void {
  const fe = toForkdError(err);
  const body = JSON.stringify(fe.toJSON());
  socket.end(`HTTP/1.1 ${fe.status} ${fe.code}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/**
 * `GET /node/v1/sandboxes/:id/ports/:port` with `Upgrade: forkd-port`: after
 * the 101 the socket carries the connection's bytes both ways, unframed
 * (spliced to the PortConnection's stream); either side closing closes the other.
 * Returns false for an upgrade that is not a port connection.
 */
export function portUpgrade(node: NodeService, token: string, results: PortResults, logger: Logger) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const m = PORT_PATH.exec(req.url ?? '');
    if (!m || req.method !== 'GET' || (req.headers.upgrade ?? '').toLowerCase() !== PORT_UPGRADE) return false;
    socket.on('error', () => {});
    if (!presentsToken(req.headers.authorization, token)) {
      refuse(socket, new ForkdError('UNAUTHENTICATED', 'this node answers only its control plane (node token)'));
      return true;
    }
    const port = Number(m[2]);
    const close = () => destroyQuietly(socket);
    guardListener('node-http', close, async () => {
      let conn: PortConnection;
      try {
        if (port < 1 || port > 65535) throw new ForkdError('INVALID_ARGUMENT', 'port must be from 1 to 65535');
        conn = await node.connectPort(decodeURIComponent(m[1]!), port);
      } catch (err) {
        if (toForkdError(err).status >= 500) logger.warn('port connection failed', { path: req.url, error: String(err) });
        refuse(socket, err);
        return;
      }
      // The control plane gone while the connection was being made: its 'close' came before anyone listened.
      if (socket.destroyed) return conn.close();
      const id = results.add(conn.done);
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: ${PORT_UPGRADE}\r\n${PORT_CONNECTION_HEADER}: ${id}\r\n\r\n`);
      if (head.length) conn.stream.write(head);
      const closeBoth = () => {
        conn.close();
        close();
      };
      conn.stream.on('error', guardListener('node-http', closeBoth, () => conn.close()));
      socket.on('close', guardListener('node-http', closeBoth, () => conn.close()));
      closeWhenHalfClosed(socket, 'node-http', closeBoth);
      socket.pipe(conn.stream);
      conn.stream.pipe(socket);
      // The relay's last bytes may still be on their way out: let them finish, then close the reading side too.
      void conn.done.then(guardListener('node-http', close, () => {
        if (socket.writableFinished) return socket.destroy();
        socket.once('finish', close);
        socket.end();
        setTimeout(close, 5000).unref();
      }), close);
    })();
    return true;
  };
}
