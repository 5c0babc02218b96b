import { ForkdError } from '@forkd/protocol';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { formatBytes, formatDuration } from '../format.js';
import { loadServer } from '../load-server.js';
import { DurationMemory } from '../duration-memory.js';
import { planFor } from '../setup-plan.js';
import { StepProgress } from '../step-progress.js';
import { styleFor } from '../style.js';

const USAGE = `Usage: forkd setup

Prepares this host (root, Debian 12 or 13): system packages, CRIU, the guest
agent, the base root filesystem, the Btrfs storage pool and the base
template. Idempotent: quick when already done.

Environment: FORKD_STATE_DIR, FORKD_CACHE_DIR, FORKD_POOL (an existing Btrfs
path) or FORKD_POOL_SIZE_GB (size of the loop image, default 64).
`;

export const setupCommand: CliCommand = {
  name: 'setup',
  usage: USAGE,
  async run(argv) {
    const { createLogger, loadConfig, NODE_IN_USE, setup, typicalSetupSteps, SETUP_STEPS, usePrivateUmask } = await loadServer('setup');
    // First: forkd's state is private, and so is whatever the tools it runs create (umask 077).
    usePrivateUmask();
    const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
    expectPositionals(positionals, []);
    const t0 = Date.now();
    const config = loadConfig(process.env);
    const memory = new DurationMemory();
    const progress = new StepProgress(process.stderr, { plan: planFor(memory, 'setup', typicalSetupSteps()) });
    // Set-up narrates through the progress lines; the JSON log would repeat it.
    const logger = createLogger(process.env.FORKD_LOG_LEVEL ? undefined : 'warn');
    let node;
    try {
      node = await setup(config, logger, progress.event);
    } catch (err) {
      // A running daemon owns the node (pool, templates, recovery): the host part is what setup had left to do.
      if (err instanceof ForkdError && err.details?.reason === NODE_IN_USE) {
        progress.event({ step: SETUP_STEPS.pool.name, done: true, ms: 0 });
        process.stdout.write(`forkd is set up; ${config.stateDir} is in use by a running forkd${err.details.pid ? ` (pid ${String(err.details.pid)})` : ''}, which keeps its own pool and templates\n`);
        return 0;
      }
      progress.fail();
      throw err;
    }
    memory.remember('setup', progress.ran);
    try {
      const s = styleFor(process.stdout);
      const pool = config.pool.image ? `${config.pool.mountPoint} (loop image ${config.pool.image}, ${formatBytes(config.pool.sizeBytes)})` : config.pool.mountPoint;
      const templates = (await node.templates.list()).map((t) => t.name);
      process.stdout.write(
        [
          `${s.green('forkd is set up')} ${s.dim(`(${formatDuration(Date.now() - t0)})`)}`,
          `  state      ${config.stateDir}`,
          `  pool       ${pool}`,
          `  templates  ${templates.join(', ') || '(none)'}`,
          `Next: forkd serve`,
        ].join('\n') + '\n',
      );
    } finally {
      await node.close();
    }
    return 0;
  },
};
