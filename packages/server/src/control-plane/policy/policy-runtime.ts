import type { Logger } from '../../shared/logger.js';
import type { ApprovalRecords } from '../../store/approval-records.js';
import { Approvals } from './approvals.js';
import { NetworkCuts } from './network-cuts.js';

export interface SandboxTemplate {
  name: string;
  id: string;
}

/** The policy gate's state shared by every caller of one control plane. */
export interface PolicyRuntime {
  approvals: Approvals;
  cuts: NetworkCuts;
  /** Each sandbox's template (name and id), as first looked up: it never changes, and a remote node need not be asked on every call. */
  templateOf: Map<string, SandboxTemplate>;
}

/** With `store` (the control store), calls waiting for approval are seen and decided through every replica. */
export function newPolicyRuntime(opts: { webhook?: string | undefined; logger?: Logger | undefined; store?: ApprovalRecords | undefined } = {}): PolicyRuntime {
  return { approvals: new Approvals(opts), cuts: new NetworkCuts(opts.logger), templateOf: new Map() };
}
