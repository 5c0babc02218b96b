import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ForkdClient, ForkdError, type Sandbox } from '@forkd/sdk';
import { httpFetch } from './http-fetch.js';

/**
 * The client for remote commands: FORKD_URL selects the server, FORKD_API_KEY
 * the key; without one, root on the server's own machine uses the admin key
 * `forkd setup` left in the state dir.
 */
export function connect(): ForkdClient {
  return new ForkdClient({ apiKey: process.env.FORKD_API_KEY || localAdminKey(), fetch: httpFetch });
}

function localAdminKey(): string | undefined {
  try {
    return readFileSync(join(process.env.FORKD_STATE_DIR || '/var/lib/forkd', 'admin.key'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
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
