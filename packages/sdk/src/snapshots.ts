import type { SandboxInfo, SnapshotInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';
import { forkRequest, Sandbox } from './sandbox.js';
import type { ForkOptions } from './types.js';
import type { WebSocketConstructor } from './websocket.js';

/** Snapshots by id, whatever sandbox they belong to (a sandbox's own are on `Sandbox`). */
export class Snapshots {
  readonly #http: HttpTransport;
  readonly #WebSocket: WebSocketConstructor | undefined;

  constructor(http: HttpTransport, WebSocket?: WebSocketConstructor) {
    this.#http = http;
    this.#WebSocket = WebSocket;
  }

  get(id: string): Promise<SnapshotInfo> {
    return this.#http.json('GET', snapshotPath(id));
  }

  /** Fails with FAILED_PRECONDITION while the snapshot holds a paused sandbox's state. */
  /** Pinned snapshots are never thinned by the timeline policy. */
  pin(id: string, pinned = true): Promise<SnapshotInfo> {
    return this.#http.json('POST', `/v1/snapshots/${encodeURIComponent(id)}/pin`, { json: { pinned } });
  }

  delete(id: string): Promise<void> {
    return this.#http.send('DELETE', snapshotPath(id));
  }

  /** New sandboxes, each starting from this snapshot's memory and files. */
  async fork(id: string, opts: ForkOptions = {}): Promise<Sandbox[]> {
    const r = await this.#http.json<{ sandboxes: SandboxInfo[] }>('POST', `${snapshotPath(id)}/fork`, { json: forkRequest(opts) });
    return r.sandboxes.map((info) => new Sandbox(this.#http, info, this.#WebSocket));
  }
}

function snapshotPath(id: string): string {
  return `/v1/snapshots/${encodeURIComponent(id)}`;
}
