import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { formatBytes, printJson } from '../format.js';

const USAGE = `Usage: forkd metrics ID [--json]

Shows a sandbox's resource usage: memory, CPU time, processes, OOM kills, disk.

Options:
      --json   print the raw numbers as JSON
`;

export const metricsCommand: CliCommand = {
  name: 'metrics',
  usage: USAGE,
  async run(argv) {
    const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
    const [id] = expectPositionals(positionals, ['ID']);
    const m = await (await openSandbox(id!)).metrics();
    if (values.json) {
      printJson(m);
      return 0;
    }
    const pct = m.memoryLimitBytes > 0 ? ` (${Math.round((m.memoryBytes / m.memoryLimitBytes) * 100)}%)` : '';
    process.stdout.write(
      [
        `memory     ${formatBytes(m.memoryBytes)} / ${formatBytes(m.memoryLimitBytes)}${pct}`,
        `cpu        ${(m.cpuNanos / 1e9).toFixed(2)}s`,
        `processes  ${m.pids}`,
        `oom kills  ${m.oomKills}`,
        `disk       ${formatBytes(m.diskBytes)} (${formatBytes(m.diskWrittenBytes)} not shared with its template or snapshots)`,
        ...(m.diskQuotaBytes !== undefined ? [`disk quota ${formatBytes(m.diskQuotaUsedBytes ?? 0)} / ${formatBytes(m.diskQuotaBytes)} (beyond its template)`] : []),
      ].join('\n') + '\n',
    );
    return 0;
  },
};
