import { fstatSync, statSync } from 'node:fs';
import { isatty } from 'node:tty';

/** What a command's stdin is: a terminal, nothing to read (/dev/null, an empty file, closed), or data. */
export type StdinKind = 'terminal' | 'empty' | 'data';

/**
 * Looks at the descriptor, not at process.stdin: creating that stream costs a
 * short-lived command milliseconds, and only piped data needs it. A pipe is
 * data even if it turns out empty: that is known only by reading it.
 */
export function stdinKind(fd = 0): StdinKind {
  let st;
  try {
    st = fstatSync(fd);
  } catch {
    return 'empty'; // closed (`forkd exec ... <&-`)
  }
  if (st.isFile() && st.size === 0) return 'empty';
  if (st.isCharacterDevice()) {
    if (st.rdev === devNullRdev()) return 'empty';
    if (isatty(fd)) return 'terminal';
  }
  return 'data';
}

function devNullRdev(): number | undefined {
  try {
    return statSync('/dev/null').rdev;
  } catch {
    return undefined;
  }
}
