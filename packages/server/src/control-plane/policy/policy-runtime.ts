import type { Logger } from '../../shared/logger.js';
import { Approvals } from './approvals.js';
import { NetworkCuts } from './network-cuts.js';

/** The policy gate's state shared by every caller of one control plane. */
export interface PolicyRuntime {
  approvals: Approvals;
  cuts: NetworkCuts;
}

export function newPolicyRuntime(opts: { webhook?: string | undefined; logger?: Logger | undefined } = {}): PolicyRuntime {
  return { approvals: new Approvals(opts), cuts: new NetworkCuts(opts.logger) };
}
