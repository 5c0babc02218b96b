import type { SecretInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';

/**
 * The tenant's secrets: values go in, never come out (stored encrypted; a
 * sandbox gets one only as a header the egress proxy adds, by grant; see
 * Sandbox.createGrant).
 */
export class Secrets {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** Creates or replaces; grants of it use the new value from their next request. */
  set(name: string, value: string): Promise<SecretInfo> {
    return this.#http.json('PUT', `/v1/secrets/${encodeURIComponent(name)}`, { json: { value } });
  }

  /** Names and times only. */
  async list(): Promise<SecretInfo[]> {
    return (await this.#http.json<{ secrets: SecretInfo[] }>('GET', '/v1/secrets')).secrets;
  }

  /** Removes it and every grant of it, at once. */
  remove(name: string): Promise<void> {
    return this.#http.send('DELETE', `/v1/secrets/${encodeURIComponent(name)}`);
  }
}
