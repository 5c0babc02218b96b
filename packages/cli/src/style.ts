/** ANSI styling, only for terminals and never with NO_COLOR set. */
export interface Style {
  dim(s: string): string;
  bold(s: string): string;
  green(s: string): string;
  red(s: string): string;
}

export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Style {
  const on = !!stream.isTTY && !env.NO_COLOR && env.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (s: string) => (on ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return { dim: wrap(2, 22), bold: wrap(1, 22), green: wrap(32, 39), red: wrap(31, 39) };
}
