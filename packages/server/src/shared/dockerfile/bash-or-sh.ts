/**
 * A shell that runs its command by bash where the root has bash, else by
 * sh: what E2B's template steps mean (its builder runs them with bash; an
 * Alpine image has none). The command is `$0`, never spliced into the
 * script, so `[...BASH_OR_SH, cmd]` runs exactly `cmd`.
 */
export const BASH_OR_SH: readonly string[] = ['/bin/sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -c "$0"; fi; exec /bin/sh -c "$0"'];

/**
 * The argv a policy judges for one a build runs: `[...BASH_OR_SH, cmd]` is
 * `sh -c cmd` (so a pattern written against the command sees it, not the
 * wrapper); any other argv is itself.
 */
export function judgedArgv(argv: readonly string[]): string[] {
  return argv.length === BASH_OR_SH.length + 1 && BASH_OR_SH.every((w, i) => argv[i] === w) ? ['/bin/sh', '-c', argv.at(-1)!] : [...argv];
}
