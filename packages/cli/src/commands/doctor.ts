import type { DoctorFinding, DoctorReport } from '@forkd/protocol';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { loadServer } from '../load-server.js';
import { styleFor, type Style } from '../style.js';

const USAGE = `Usage: forkd doctor [--json]

Checks this host for what forkd needs and prints each finding with its fix:
the kernel (version, user namespaces, idmapped mounts, userfaultfd, cgroups,
seccomp, Btrfs, loop devices), forkd's CRIU and runc (a runc open to the 2025
CVEs is refused), the storage pool (free space, quota mode), IPv4 forwarding
on the uplink, time synchronization, the API and E2B ports, and the health of
the daemon at $FORKD_URL (default the configured address). Needs no daemon;
run it as root to read forkd's own files.

Exit status: 0 when nothing blocks a feature (warnings allowed), 1 when some
check is an error.

Options:
      --json   print the report as JSON (DoctorReport in @forkd/protocol)

Environment: the daemon's (FORKD_STATE_DIR, FORKD_CACHE_DIR, FORKD_POOL,
FORKD_PORT, FORKD_E2B_API_PORT, ...), read as forkd serve reads them.
`;

const MARK: Record<DoctorFinding['status'], (s: Style) => string> = {
  ok: (s) => s.green('ok   '),
  warn: (s) => s.bold('warn '),
  error: (s) => s.red('error'),
  skip: (s) => s.dim('skip '),
};

export function renderReport(report: DoctorReport, s: Style): string {
  const width = Math.max(...report.findings.map((f) => f.check.length));
  const lines = report.findings.flatMap((f) => [`${MARK[f.status](s)}  ${f.check.padEnd(width)}  ${f.summary}`, ...(f.fix ? [`${' '.repeat(width + 9)}${s.dim(`fix: ${f.fix}`)}`] : [])]);
  const verdict = report.ok ? s.green('nothing blocks a feature') : s.red(`${report.errors} error${report.errors === 1 ? '' : 's'}: some features will not work`);
  return `${lines.join('\n')}\n${verdict}${report.warnings ? `, ${report.warnings} warning${report.warnings === 1 ? '' : 's'}` : ''}\n`;
}

export const doctorCommand: CliCommand = {
  name: 'doctor',
  usage: USAGE,
  async run(argv) {
    const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
    expectPositionals(positionals, []);
    // Loaded here, not at start: the checks live with the daemon's code, which no other client command needs.
    const { loadConfig, runDoctor } = await loadServer('doctor');
    const report = await runDoctor(loadConfig(process.env));
    process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report, styleFor(process.stdout)));
    return report.ok ? 0 : 1;
  },
};
