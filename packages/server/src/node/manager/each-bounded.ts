/**
 * Works on items a few at a time, waiting at most `timeoutMs` for each: an
 * item that overruns is reported (`onTimeout`) and the pass moves on, so one
 * stuck sandbox delays no other. The overrunning work is not cancelled (it
 * goes on in the background and must end by its own deadlines); `onSettled`
 * says when it does, which lets a caller keep the next pass off that item.
 */
export async function eachBounded<T>(
  items: Iterable<T>,
  opts: {
    concurrency: number;
    timeoutMs: number;
    onTimeout(item: T): void;
    onError(item: T, err: unknown): void;
    onSettled?(item: T): void;
  },
  work: (item: T) => Promise<void>,
): Promise<void> {
  const queue = [...items];
  const worker = async (): Promise<void> => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
      const it = item;
      const done = Promise.resolve()
        .then(() => work(it))
        .catch((err) => opts.onError(it, err))
        .finally(() => opts.onSettled?.(it));
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), opts.timeoutMs)));
      const outcome = await Promise.race([done, expired]);
      clearTimeout(timer);
      if (outcome === 'timeout') opts.onTimeout(it);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency, queue.length)) }, worker));
}
