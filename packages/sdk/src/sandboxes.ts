import type { CreateSandboxRequest, SandboxInfo, SandboxState, TemplateInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';
import { Sandbox } from './sandbox.js';
import { Templates } from './templates.js';
import type { WebSocketConstructor } from './websocket.js';

export type CreateSandboxOptions = CreateSandboxRequest;

export interface ListSandboxesFilter {
  state?: SandboxState[];
  /** Every pair must match. */
  metadata?: Record<string, string>;
  /** Admin keys: every tenant's sandboxes, each with its `info.tenant`. */
  allTenants?: boolean;
}

export class Sandboxes {
  readonly #http: HttpTransport;
  readonly #WebSocket: WebSocketConstructor | undefined;
  readonly #templates: Templates;

  constructor(http: HttpTransport, WebSocket?: WebSocketConstructor, templates: Templates = new Templates(http)) {
    this.#http = http;
    this.#WebSocket = WebSocket;
    this.#templates = templates;
  }

  async create(opts: CreateSandboxOptions = {}): Promise<Sandbox> {
    return this.#wrap(await this.#http.json<SandboxInfo>('POST', '/v1/sandboxes', { json: opts }));
  }

  async get(id: string): Promise<Sandbox> {
    return this.#wrap(await this.#http.json<SandboxInfo>('GET', `/v1/sandboxes/${encodeURIComponent(id)}`));
  }

  /** Every sandbox matching the filter (all pages), oldest first. */
  async list(filter: ListSandboxesFilter = {}): Promise<Sandbox[]> {
    const out: Sandbox[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.listPage({ ...filter, cursor });
      out.push(...page.sandboxes);
      cursor = page.nextCursor;
    } while (cursor);
    return out;
  }

  /** One page; pass its `nextCursor` back for the next. */
  async listPage(filter: ListSandboxesFilter & { limit?: number; cursor?: string | undefined } = {}): Promise<{ sandboxes: Sandbox[]; nextCursor?: string }> {
    const query = {
      state: filter.state?.join(','),
      metadata: filter.metadata ? new URLSearchParams(filter.metadata).toString() : undefined,
      limit: filter.limit,
      cursor: filter.cursor,
      allTenants: filter.allTenants ? 'true' : undefined,
    };
    const r = await this.#http.json<{ sandboxes: SandboxInfo[]; nextCursor?: string }>('GET', '/v1/sandboxes', { query });
    return { sandboxes: r.sandboxes.map((info) => this.#wrap(info)), ...(r.nextCursor ? { nextCursor: r.nextCursor } : {}) };
  }

  /** Deletes by id, without fetching it first. */
  delete(id: string): Promise<void> {
    return this.#http.send('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}`);
  }

  /** @deprecated Use `client.templates.list()`. */
  templates(): Promise<TemplateInfo[]> {
    return this.#templates.list();
  }

  #wrap(info: SandboxInfo): Sandbox {
    return new Sandbox(this.#http, info, this.#WebSocket);
  }
}
