/** One `forkd` subcommand. `run` gets the arguments after its name and returns the exit status. */
export interface CliCommand {
  name: string;
  /** One line for `forkd --help`. */
  summary: string;
  /** The full text of `forkd NAME --help`. */
  usage: string;
  run(argv: string[]): Promise<number>;
}
