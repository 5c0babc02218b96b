export { runCli, overview } from './cli.js';
export { COMMANDS, findCommand } from './commands/registry.js';
export type { CliCommand } from './command.js';
export { UsageError } from './usage-error.js';
