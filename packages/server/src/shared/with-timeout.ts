/** `p`, or the error `late()` makes if `ms` pass first; the timer goes either way. */
export function withTimeout<T>(p: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(late()), ms)));
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
