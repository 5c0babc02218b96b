import { HttpTransport } from './http-transport.js';
import { Sandboxes } from './sandboxes.js';
import { Snapshots } from './snapshots.js';
import { Templates } from './templates.js';
import { Keys } from './keys.js';
import { Nodes } from './nodes.js';
import { Audit } from './audit.js';
import { Tenants } from './tenants.js';
import { Secrets } from './secrets.js';
import { Approvals } from './approvals.js';
import type { WebSocketConstructor } from './websocket.js';
import type { FetchLike } from './fetch-like.js';

export interface ForkdClientOptions {
  /** Default: env FORKD_URL, else http://127.0.0.1:8080. */
  url?: string;
  /** Sent as `Authorization: Bearer`. Default: env FORKD_API_KEY. Every call but health needs one. */
  apiKey?: string;
  /** Admin keys: make every call as this tenant (its sandboxes, templates, limits), audited under the admin's key. Default: env FORKD_TENANT. */
  tenant?: string;
  /** A fetch to use instead of the global one (it may answer with anything shaped like a Response). */
  fetch?: FetchLike;
  /** A WebSocket class to use instead of the global one (interactive streams). */
  WebSocket?: WebSocketConstructor;
  /**
   * How long an exec, attach or interactive stream whose connection went (a
   * daemon stop, restart or upgrade: the process runs on in its sandbox)
   * keeps trying to resume, in ms; it then goes on where it was. Default
   * 60 s; 0 turns resuming off (the stream then ends as detached).
   */
  reconnectTimeoutMs?: number;
}

export const DEFAULT_URL = 'http://127.0.0.1:8080';

function env(name: string): string | undefined {
  return typeof process !== 'undefined' ? process.env?.[name] || undefined : undefined;
}

/** Entry point of the SDK. Every failure surfaces as a ForkdError with the server's code. */
export class ForkdClient {
  readonly url: string;
  readonly sandboxes: Sandboxes;
  readonly snapshots: Snapshots;
  readonly templates: Templates;
  readonly keys: Keys;
  readonly audit: Audit;
  readonly tenants: Tenants;
  readonly secrets: Secrets;
  readonly approvals: Approvals;
  readonly nodes: Nodes;
  readonly #http: HttpTransport;

  constructor(opts: ForkdClientOptions = {}) {
    this.url = opts.url ?? env('FORKD_URL') ?? DEFAULT_URL;
    this.#http = new HttpTransport({ url: this.url, apiKey: opts.apiKey ?? env('FORKD_API_KEY'), tenant: opts.tenant ?? env('FORKD_TENANT'), fetch: opts.fetch, reconnectTimeoutMs: opts.reconnectTimeoutMs });
    this.templates = new Templates(this.#http);
    this.sandboxes = new Sandboxes(this.#http, opts.WebSocket, this.templates);
    this.snapshots = new Snapshots(this.#http, opts.WebSocket);
    this.keys = new Keys(this.#http);
    this.audit = new Audit(this.#http);
    this.tenants = new Tenants(this.#http);
    this.secrets = new Secrets(this.#http);
    this.approvals = new Approvals(this.#http);
    this.nodes = new Nodes(this.#http);
  }

  health(): Promise<{ ok: boolean }> {
    return this.#http.json('GET', '/v1/health');
  }
}
