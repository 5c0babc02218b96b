import type { CliCommand } from '../command.js';
import { approvalsCommand, approveCommand, denyCommand } from './approvals.js';
import { attachCommand } from './attach.js';
import { auditCommand } from './audit.js';
import { keysCommand } from './keys.js';
import { nodesCommand } from './nodes.js';
import { tenantsCommand } from './tenants.js';
import { logsCommand } from './logs.js';
import { cpCommand } from './cp.js';
import { doctorCommand } from './doctor.js';
import { createCommand } from './create.js';
import { execCommand } from './exec.js';
import { forkCommand } from './fork.js';
import { killCommand } from './kill.js';
import { pauseCommand, resumeCommand, rewindCommand, timeoutCommand } from './lifecycle.js';
import { lsCommand } from './ls.js';
import { mcpCommand } from './mcp.js';
import { metricsCommand } from './metrics.js';
import { networkCommand } from './network.js';
import { secretCommand } from './secret.js';
import { grantCommand } from './grant.js';
import { policyCommand } from './policy.js';
import { psCommand } from './ps.js';
import { rmCommand } from './rm.js';
import { serveCommand } from './serve.js';
import { setupCommand } from './setup.js';
import { shellCommand } from './shell.js';
import { pinCommand, snapshotCommand, snapshotRmCommand } from './snapshot.js';
import { templateCommand, templatesCommand } from './template.js';
import { timelineCommand } from './timeline.js';
import { treeCommand } from './tree.js';

/** In the order `forkd --help` lists them. */
export const COMMANDS: readonly CliCommand[] = [
  setupCommand,
  serveCommand,
  doctorCommand,
  createCommand,
  lsCommand,
  rmCommand,
  execCommand,
  shellCommand,
  cpCommand,
  psCommand,
  attachCommand,
  killCommand,
  metricsCommand,
  logsCommand,
  snapshotCommand,
  timelineCommand,
  forkCommand,
  rewindCommand,
  pauseCommand,
  resumeCommand,
  timeoutCommand,
  networkCommand,
  secretCommand,
  grantCommand,
  policyCommand,
  approvalsCommand,
  approveCommand,
  denyCommand,
  treeCommand,
  snapshotRmCommand,
  pinCommand,
  templateCommand,
  templatesCommand,
  keysCommand,
  tenantsCommand,
  nodesCommand,
  auditCommand,
  mcpCommand,
];

export function findCommand(name: string): CliCommand | undefined {
  return COMMANDS.find((c) => c.name === name);
}
