import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ForkdError } from '@forkd/protocol/errors';
import type { ServiceReport } from '@forkd/server';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { loadServer, type ServerModule } from '../load-server.js';
import { cliPackage } from '../package-dir.js';
import { UsageError } from '../usage-error.js';

const INSTALL_USAGE = `Usage: forkd install [--no-start] [--root DIR]

Installs forkd as a systemd service (root): /etc/systemd/system/forkd.service
(runs \`forkd serve\` from this checkout, restarts on failure, logs to the
journal; a stop or restart leaves sandboxes running and the next start adopts
them), /etc/forkd/forkd.env (FORKD_* settings, made from this shell's
when missing, kept when there) and /usr/local/bin/forkd (the CLI on PATH);
then enables and starts the service. Run \`forkd setup\` first.

Options:
  --no-start   write the files only
  --root DIR   install under DIR instead of / (a staged image; never starts anything)
`;

const UNINSTALL_USAGE = `Usage: forkd uninstall [--root DIR]

Stops and disables forkd.service and removes the unit and /usr/local/bin/forkd.
Running sandboxes, the state, the storage pool and /etc/forkd/forkd.env are kept;
it prints how to remove them.

Options:
  --root DIR   uninstall what \`forkd install --root DIR\` wrote
`;

/** This CLI's checkout: packages/cli → the repository root. */
function checkout(): string {
  const pkg = cliPackage();
  if (!pkg) throw new ForkdError('FAILED_PRECONDITION', 'forkd install runs from a checkout of forkd; this CLI is not in one');
  return resolve(pkg.dir, '../..');
}

function parseRoot(argv: string[], withNoStart: boolean): { root: string; noStart: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { root: { type: 'string' }, ...(withNoStart ? { 'no-start': { type: 'boolean' } } : {}) } });
  expectPositionals(positionals, []);
  const root = values.root === undefined ? '/' : resolve(values.root);
  if (root === '/' && process.getuid?.() !== 0) throw new UsageError('forkd install and uninstall need root (or --root DIR)');
  return { root, noStart: values['no-start'] === true };
}

function print(report: ServiceReport, verb: string): void {
  for (const line of report.done) process.stdout.write(`${line}\n`);
  if (report.notRunning) process.stdout.write(`not ${verb} forkd.service: ${report.notRunning}\n`);
}

export const installCommand: CliCommand = {
  name: 'install',
  usage: INSTALL_USAGE,
  async run(argv) {
    const { root, noStart } = parseRoot(argv, true);
    const { installService } = await loadServer('install');
    const report = await installService({ root, noStart, node: process.execPath, checkout: checkout(), env: process.env });
    print(report, 'starting');
    if (report.notRunning) {
      process.stdout.write(root === '/' ? 'Start it where systemd runs with: systemctl enable --now forkd.service (or run: forkd serve)\n' : '');
    } else process.stdout.write('Logs: journalctl -u forkd -f\n');
    return 0;
  },
};

/** The daemon's settings as the installed unit would see them: this shell's, then the environment file's. */
function serviceConfig(server: ServerModule, root: string) {
  const { loadConfig, parseEnvironmentFile, SERVICE_PATHS } = server;
  let fromFile: Record<string, string> = {};
  try {
    fromFile = parseEnvironmentFile(readFileSync(join(root, SERVICE_PATHS.envFile), 'utf8'));
  } catch {
    // No file: the defaults.
  }
  return loadConfig({ ...process.env, ...fromFile });
}

export const uninstallCommand: CliCommand = {
  name: 'uninstall',
  usage: UNINSTALL_USAGE,
  async run(argv) {
    const { root } = parseRoot(argv, false);
    const server = await loadServer('uninstall');
    const report = await server.uninstallService({ root });
    print(report, 'stopping');
    const config = serviceConfig(server, root);
    const pool = config.pool.image ? `${config.pool.mountPoint} (loop image ${config.pool.image})` : `${config.pool.mountPoint} (FORKD_POOL, yours)`;
    process.stdout.write(
      [
        'Kept (remove them to remove forkd completely):',
        `  settings   ${server.SERVICE_PATHS.envFile}`,
        `  state      ${config.stateDir} (database, keys, snapshots)`,
        `  pool       ${pool}`,
        `  cache      ${config.cacheDir}`,
        'Running sandboxes keep running (delete them with `forkd rm --all` while a daemon serves); to remove the rest:',
        `  umount ${config.pool.mountPoint}; rm -rf ${[config.stateDir, config.cacheDir, server.SERVICE_PATHS.envFile].join(' ')}`,
      ].join('\n') + '\n',
    );
    return 0;
  },
};
