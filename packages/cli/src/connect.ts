import { ForkdClient, ForkdError, type Sandbox } from '@forkd/sdk';

/** The client for remote commands; FORKD_URL and FORKD_API_KEY select the server (read by the SDK). */
export function connect(): ForkdClient {
  return new ForkdClient();
}

export function openSandbox(id: string): Promise<Sandbox> {
  return connect().sandboxes.get(id);
}

/** Interactive commands need a WebSocket; say how to get one rather than failing deep inside. */
export function requireWebSocket(what: string): void {
  if (typeof (globalThis as { WebSocket?: unknown }).WebSocket !== 'function') {
    throw new ForkdError('FAILED_PRECONDITION', `${what} needs WebSocket support: run node with --experimental-websocket (Node 20) or use Node >= 22`);
  }
}
