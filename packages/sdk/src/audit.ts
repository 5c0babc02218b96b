import type { AuditRecord } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';

export interface AuditFilter {
  sandbox?: string;
  operation?: string;
  code?: string;
  /** ISO time: records at or after it. */
  since?: string;
  /** Records older than this id (paging back from the newest). */
  before?: number;
  /** Records newer than this id, oldest first (following the log). */
  after?: number;
  limit?: number;
  /** Admin keys only. */
  tenant?: string;
}

/** The audit log: one record per API call, newest first. */
export class Audit {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  async list(filter: AuditFilter = {}): Promise<AuditRecord[]> {
    return (await this.#http.json<{ records: AuditRecord[] }>('GET', '/v1/audit', { query: { ...filter } })).records;
  }
}
