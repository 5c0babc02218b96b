/**
 * Where snapshots go when they leave a node: a flat namespace of immutable
 * objects. Implementations: a directory (local disk or a shared mount) and
 * any S3-compatible service. Keys are `/`-separated printable ASCII
 * (`[A-Za-z0-9._/-]`, no empty, `.` or `..` segment, ≤ 512 bytes; the one
 * check is blob-key.ts); anything else is INVALID_ARGUMENT. Objects are written whole or not at all (a reader never
 * sees half an object), and `put` of an existing key replaces it.
 * Errors are ForkdErrors (NOT_FOUND only where a method says so).
 */
export interface BlobStore {
  /** Stores the bytes under `key`, atomically. */
  put(key: string, data: Uint8Array): Promise<void>;
  /** The whole object, or undefined when absent. */
  get(key: string): Promise<Uint8Array | undefined>;
  has(key: string): Promise<boolean>;
  /** Every key starting with `prefix`, in byte order. */
  list(prefix: string): AsyncIterable<string>;
  /** Absent keys are not an error. */
  delete(key: string): Promise<void>;
  /** What the store is, for logs and `forkd nodes ls` (no secrets). */
  describe(): string;
}
