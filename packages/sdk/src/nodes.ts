import type { NodeInfo } from '@forkd/protocol';
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

  /** It takes no new sandboxes from now on. */
  drain(id: string): Promise<NodeInfo> {
    return this.#http.json('POST', `/v1/nodes/${encodeURIComponent(id)}/drain`);
  }

  /** Forgets it: refused while sandboxes are placed on it, unless it is lost. */
  remove(id: string): Promise<void> {
    return this.#http.send('DELETE', `/v1/nodes/${encodeURIComponent(id)}`);
  }
}
