import { ForkdError } from '@forkd/protocol/errors';

/** The part of the WHATWG WebSocket the SDK uses (Node's global, browsers', or an injected one). */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string | ArrayBufferView | ArrayBuffer): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'message' | 'error' | 'close', listener: (event: never) => void): void;
}

export type WebSocketConstructor = new (url: string, protocolsOrInit?: string | string[] | { headers?: Record<string, string> }) => WebSocketLike;

export const WS_OPEN = 1;

/** The constructor to use, with a message that says how to get one when the runtime lacks it. */
export function resolveWebSocket(injected: WebSocketConstructor | undefined): WebSocketConstructor {
  const ctor = injected ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof ctor !== 'function') {
    throw new ForkdError(
      'FAILED_PRECONDITION',
      'WebSocket is not available in this runtime: on Node 20 run node with --experimental-websocket (Node >= 22 has it built in), or pass { WebSocket } to ForkdClient',
    );
  }
  return ctor;
}

/**
 * Opens a socket. Node's WebSocket (undici) accepts headers, which carries the
 * API key; browsers cannot send headers, and passing an object there would be
 * read as a protocol list, so it is only done on Node.
 */
export function openWebSocket(ctor: WebSocketConstructor, url: string, headers: Record<string, string>): WebSocketLike {
  const onNode = typeof process !== 'undefined' && !!process.versions?.node;
  const ws = onNode && Object.keys(headers).length ? new ctor(url, { headers }) : new ctor(url);
  ws.binaryType = 'arraybuffer';
  return ws;
}
