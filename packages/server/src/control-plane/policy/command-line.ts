/** A word as a POSIX shell would need it written to get it back as one argument. */
export function shellQuote(word: string): string {
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'busybox']);

/**
 * The texts an exec's patterns are matched against: argv joined with shell
 * quoting (what a shell would have been typed), and, when argv is a shell
 * `-c` invocation (`bash -lc SCRIPT`, `/bin/sh -c SCRIPT`, `env bash -c ...`),
 * the script itself: a policy written against `^rm -rf /$` must catch
 * `["bash","-lc","rm -rf /"]` as well as `["rm","-rf","/"]`.
 */
export function commandTexts(argv: readonly string[]): string[] {
  const out = [argv.map(shellQuote).join(' ')];
  let i = 0;
  // `env [VAR=x ...] bash -c` and `busybox sh -c` reach the same shell.
  const base = (w: string | undefined) => (w ?? '').split('/').pop() ?? '';
  if (base(argv[i]) === 'env') {
    i++;
    while (i < argv.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(argv[i] ?? '')) i++;
  }
  if (base(argv[i]) === 'busybox') i++;
  if (!SHELLS.has(base(argv[i]))) return out;
  for (let j = i + 1; j < argv.length; j++) {
    const a = argv[j] ?? '';
    if (!a.startsWith('-') || a === '-' || a === '--') break;
    // Clustered short options (`-lc`, `-ec`, `-xc`): the script is the first operand after them.
    if (!a.startsWith('--') && a.includes('c')) {
      const script = argv[j + 1];
      if (script !== undefined) out.push(script);
      break;
    }
  }
  return out;
}
