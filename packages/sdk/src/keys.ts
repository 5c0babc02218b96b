import type { CreatedKey, CreateKeyRequest, KeyInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';

/** API keys. Creating keys needs an admin key; every key is bound to one tenant. */
export class Keys {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** The key is in the answer only: the server keeps a hash. */
  create(req: CreateKeyRequest = {}): Promise<CreatedKey> {
    return this.#http.json('POST', '/v1/keys', { json: req });
  }

  /** An admin key sees every tenant's keys; others their own tenant's. */
  async list(): Promise<KeyInfo[]> {
    return (await this.#http.json<{ keys: KeyInfo[] }>('GET', '/v1/keys')).keys;
  }

  revoke(id: string): Promise<void> {
    return this.#http.send('DELETE', `/v1/keys/${encodeURIComponent(id)}`);
  }
}
