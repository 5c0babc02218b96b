import type { CliCommand, CommandEntry } from '../command.js';

const entry = (name: string, summary: string, load: () => Promise<CliCommand>): CommandEntry => ({ name, summary, load });

/** In the order `forkd --help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  entry('setup', 'prepare this host (packages, CRIU, storage pool, base template)', async () => (await import('./setup.js')).setupCommand),
  entry('serve', 'run the API server in the foreground', async () => (await import('./serve.js')).serveCommand),
  entry('doctor', 'check this host for what forkd needs (each finding with its fix)', async () => (await import('./doctor.js')).doctorCommand),
  entry('install', 'install forkd as a systemd service and put the CLI on PATH', async () => (await import('./install.js')).installCommand),
  entry('uninstall', 'stop and remove the systemd service (keeps sandboxes and data)', async () => (await import('./install.js')).uninstallCommand),
  entry('create', 'create a sandbox and print its id', async () => (await import('./create.js')).createCommand),
  entry('ls', 'list sandboxes', async () => (await import('./ls.js')).lsCommand),
  entry('rm', 'delete sandboxes', async () => (await import('./rm.js')).rmCommand),
  entry('exec', 'run a command in a sandbox', async () => (await import('./exec.js')).execCommand),
  entry('shell', 'open an interactive terminal in a sandbox', async () => (await import('./shell.js')).shellCommand),
  entry('cp', 'copy a file into or out of a sandbox', async () => (await import('./cp.js')).cpCommand),
  entry('ps', 'list processes in a sandbox', async () => (await import('./ps.js')).psCommand),
  entry('attach', "follow a running process's output", async () => (await import('./attach.js')).attachCommand),
  entry('kill', 'signal a process in a sandbox', async () => (await import('./kill.js')).killCommand),
  entry('metrics', "show a sandbox's resource usage", async () => (await import('./metrics.js')).metricsCommand),
  entry('logs', "show a sandbox's event log", async () => (await import('./logs.js')).logsCommand),
  entry('snapshot', 'snapshot a sandbox and print the snapshot id', async () => (await import('./snapshot.js')).snapshotCommand),
  entry('timeline', "list a sandbox's snapshots", async () => (await import('./timeline.js')).timelineCommand),
  entry('fork', 'fork a sandbox or a snapshot into new sandboxes', async () => (await import('./fork.js')).forkCommand),
  entry('rewind', 'put a sandbox back to one of its snapshots', async () => (await import('./lifecycle.js')).rewindCommand),
  entry('pause', 'snapshot a sandbox and stop it', async () => (await import('./lifecycle.js')).pauseCommand),
  entry('resume', 'resume a paused sandbox', async () => (await import('./lifecycle.js')).resumeCommand),
  entry('timeout', "set a sandbox's lifetime", async () => (await import('./lifecycle.js')).timeoutCommand),
  entry('network', "show or replace a sandbox's network mode and egress rules", async () => (await import('./network.js')).networkCommand),
  entry('secret', 'set, list and remove secrets (values go in, never out)', async () => (await import('./secret.js')).secretCommand),
  entry('grant', "grant a sandbox's requests a secret as a header; list and revoke grants", async () => (await import('./grant.js')).grantCommand),
  entry('policy', 'set or show the per-call policy of a sandbox, template or tenant', async () => (await import('./policy.js')).policyCommand),
  entry('approvals', 'list calls waiting for approval', async () => (await import('./approvals.js')).approvalsCommand),
  entry('approve', 'approve a waiting call (it runs)', async () => (await import('./approvals.js')).approveCommand),
  entry('deny', 'deny a waiting call (it fails with PERMISSION_DENIED)', async () => (await import('./approvals.js')).denyCommand),
  entry('tree', 'show the sandboxes forked from a sandbox', async () => (await import('./tree.js')).treeCommand),
  entry('snapshot-rm', 'delete snapshots', async () => (await import('./snapshot.js')).snapshotRmCommand),
  entry('pin', 'pin or unpin a snapshot', async () => (await import('./snapshot.js')).pinCommand),
  entry('template', 'list, build and delete templates', async () => (await import('./template.js')).templateCommand),
  entry('templates', "list templates (same as 'template ls')", async () => (await import('./template.js')).templatesCommand),
  entry('keys', 'create, list and revoke API keys', async () => (await import('./keys.js')).keysCommand),
  entry('tenants', "show and set a tenant's limits and network policy", async () => (await import('./tenants.js')).tenantsCommand),
  entry('nodes', 'list, drain and remove the nodes of a fleet', async () => (await import('./nodes.js')).nodesCommand),
  entry('audit', 'show the audit log of API calls', async () => (await import('./audit.js')).auditCommand),
  entry('mcp', "serve forkd's tools to an MCP client over stdio", async () => (await import('./mcp.js')).mcpCommand),
];

export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((c) => c.name === name);
}
