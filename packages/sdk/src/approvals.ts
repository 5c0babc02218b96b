import type { ApprovalInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';

/** Calls waiting for an approver (policy `requireApproval`): a tenant's keys see and decide its own; admin keys all. */
export class Approvals {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** Pending calls, oldest first. */
  async list(): Promise<ApprovalInfo[]> {
    return (await this.#http.json<{ approvals: ApprovalInfo[] }>('GET', '/v1/approvals')).approvals;
  }

  /** The call runs. */
  approve(id: string): Promise<ApprovalInfo> {
    return this.#http.json('POST', `/v1/approvals/${encodeURIComponent(id)}/approve`);
  }

  /** The call ends with PERMISSION_DENIED. */
  deny(id: string): Promise<ApprovalInfo> {
    return this.#http.json('POST', `/v1/approvals/${encodeURIComponent(id)}/deny`);
  }
}
