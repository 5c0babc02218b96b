export { runCli, overview } from './cli.js';
export { COMMANDS, findCommand } from './commands/registry.js';
export type { CliCommand, CommandEntry } from './command.js';
export { UsageError } from './usage-error.js';
