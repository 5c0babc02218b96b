export interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
  settled: boolean;
}

/** A promise settled from outside; one nobody awaits (a detached session) is no unhandled rejection. */
export function deferred<T>(): Deferred<T> {
  const d = { settled: false } as Deferred<T>;
  d.promise = new Promise<T>((res, rej) => {
    d.resolve = (v) => {
      d.settled = true;
      res(v);
    };
    d.reject = (e) => {
      d.settled = true;
      rej(e);
    };
  });
  d.promise.catch(() => {});
  return d;
}
