import type { DrainResult, MigrationInfo, NodeInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';

/** The fleet's nodes (admin keys only; a control plane over one `--node` answers FAILED_PRECONDITION). */
export class Nodes {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  async list(): Promise<NodeInfo[]> {
    return (await this.#http.json<{ nodes: NodeInfo[] }>('GET', '/v1/nodes')).nodes;
  }

  /** It takes no new sandboxes from now on, and every sandbox on it moves to another node. */
  drain(id: string): Promise<DrainResult> {
    return this.#http.json('POST', `/v1/nodes/${encodeURIComponent(id)}/drain`);
  }

  /** Moves a sandbox (same id, processes and memory) to `node`, or to where placement says. */
  migrate(sandboxId: string, node?: string): Promise<MigrationInfo> {
    return this.#http.json('POST', `/v1/sandboxes/${encodeURIComponent(sandboxId)}/migrate`, { json: node ? { node } : {} });
  }

  /** Forgets it: refused while sandboxes are placed on it, unless it is lost. */
  remove(id: string): Promise<void> {
    return this.#http.send('DELETE', `/v1/nodes/${encodeURIComponent(id)}`);
  }
}
