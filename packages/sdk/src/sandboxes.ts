import type { CreateSandboxRequest, SandboxInfo, TemplateInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';
import { Sandbox } from './sandbox.js';
import type { WebSocketConstructor } from './websocket.js';

export type CreateSandboxOptions = CreateSandboxRequest;

export class Sandboxes {
  readonly #http: HttpTransport;
  readonly #WebSocket: WebSocketConstructor | undefined;

  constructor(http: HttpTransport, WebSocket?: WebSocketConstructor) {
    this.#http = http;
    this.#WebSocket = WebSocket;
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

  async templates(): Promise<TemplateInfo[]> {
    const r = await this.#http.json<{ templates: TemplateInfo[] }>('GET', '/v1/templates');
    return r.templates;
  }

  #wrap(info: SandboxInfo): Sandbox {
    return new Sandbox(this.#http, info, this.#WebSocket);
  }
}
