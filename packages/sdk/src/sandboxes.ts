import type { CreateSandboxRequest, SandboxInfo, TemplateInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';
import { Sandbox } from './sandbox.js';
import { Templates } from './templates.js';
import type { WebSocketConstructor } from './websocket.js';

export type CreateSandboxOptions = CreateSandboxRequest;

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

  async list(): Promise<Sandbox[]> {
    const r = await this.#http.json<{ sandboxes: SandboxInfo[] }>('GET', '/v1/sandboxes');
    return r.sandboxes.map((info) => this.#wrap(info));
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
