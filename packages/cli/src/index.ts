export { runCli, overview } from './cli.js';
export { COMMANDS, findCommand } from './commands/registry.js';
export type { CliCommand, CommandEntry } from './command.js';
export { UsageError } from './usage-error.js';
/** Progress of long work with estimates from past runs (the benchmark uses them too). */
export { StepProgress, type ProgressEvent, type StepProgressOptions } from './step-progress.js';
export { DurationMemory, type RememberedStep } from './duration-memory.js';
export { planFor } from './setup-plan.js';
