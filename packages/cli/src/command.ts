/** One `forkd` subcommand. `run` gets the arguments after its name and returns the exit status. */
export interface CliCommand {
  name: string;
  /** The full text of `forkd NAME --help`. */
  usage: string;
  run(argv: string[]): Promise<number>;
}

/**
 * A command as `forkd --help` lists it. Its module is imported only when it
 * runs: a client command must not pay for the server, the MCP server or the
 * schemas of commands it does not use (registry.test.ts checks what loads).
 */
export interface CommandEntry {
  name: string;
  /** One line for `forkd --help`. */
  summary: string;
  load(): Promise<CliCommand>;
}
