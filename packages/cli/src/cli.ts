import { splitAtTerminator } from './args.js';
import { COMMANDS, findCommand } from './commands/registry.js';
import { reportError } from './report-error.js';
import { UsageError } from './usage-error.js';
import { cliVersion } from './version.js';

export function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `forkd: stateful sandboxes for AI agents

Usage: forkd COMMAND [options]

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Run 'forkd COMMAND --help' for a command's options.

Environment:
  FORKD_URL       server of the remote commands (default http://127.0.0.1:8080)
  FORKD_API_KEY   sent as a bearer token (default: as root on the server, its admin key)
  FORKD_TENANT    with an admin key: act as this tenant
  FORKD_DEBUG=1   more detail on errors
`;
}

function wantsHelp(argv: readonly string[]): boolean {
  const { before } = splitAtTerminator(argv);
  return before.includes('--help') || before.includes('-h');
}

/** Runs one invocation and returns its exit status (printing errors itself). */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    process.stderr.write(overview());
    return 2;
  }
  if (name === '--help' || name === '-h') {
    process.stdout.write(overview());
    return 0;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`forkd ${cliVersion()}\n`);
    return 0;
  }
  if (name === 'help') {
    const target = rest[0] === undefined ? undefined : findCommand(rest[0]);
    if (rest[0] !== undefined && !target) return reportError(new UsageError(`unknown command ${JSON.stringify(rest[0])}`));
    process.stdout.write(target ? (await target.load()).usage : overview());
    return 0;
  }
  const entry = findCommand(name);
  if (!entry) return reportError(new UsageError(name.startsWith('-') ? `unknown option ${JSON.stringify(name)}` : `unknown command ${JSON.stringify(name)}`));
  const command = await entry.load();
  if (wantsHelp(rest)) {
    process.stdout.write(command.usage);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    return reportError(err, { command: command.name });
  }
}
