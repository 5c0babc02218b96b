import { z } from 'zod';

/**
 * File metadata: string pairs stored as the file's `user.<key>` extended
 * attributes inside the sandbox. The limits are E2B envd's (a key plus the
 * `user.` prefix fits the VFS's 255-byte xattr name; all of a file's
 * metadata fits one 4 KiB ext4 block), so what E2B accepts forkd accepts.
 */
export const FILE_METADATA_LIMITS = {
  /** Pairs on one file. */
  maxKeys: 64,
  /** Bytes of a key (255 minus `user.`). */
  maxKeyBytes: 250,
  /** Bytes of all pairs, each counted as `user.` + key + value. */
  maxTotalBytes: 4096,
} as const;

/** HTTP token characters: a key may travel as a header name (E2B's `X-Metadata-<key>`). */
const KEY = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;
/** Printable US-ASCII, as envd requires (header-safe). */
const VALUE = /^[\x20-\x7e]*$/;

/** Why `m` cannot be stored, or undefined when it can. */
export function fileMetadataProblem(m: Record<string, string>): string | undefined {
  const entries = Object.entries(m);
  if (entries.length > FILE_METADATA_LIMITS.maxKeys) return `at most ${FILE_METADATA_LIMITS.maxKeys} metadata keys`;
  let total = 0;
  for (const [k, v] of entries) {
    if (!KEY.test(k)) return `metadata key ${JSON.stringify(k)} must be non-empty HTTP token characters`;
    if (k.length > FILE_METADATA_LIMITS.maxKeyBytes) return `metadata key longer than ${FILE_METADATA_LIMITS.maxKeyBytes} bytes`;
    if (typeof v !== 'string' || !VALUE.test(v)) return `metadata value of ${JSON.stringify(k)} must be printable US-ASCII`;
    total += 5 + k.length + v.length;
  }
  if (total > FILE_METADATA_LIMITS.maxTotalBytes) return `metadata larger than ${FILE_METADATA_LIMITS.maxTotalBytes} bytes`;
  return undefined;
}

export const FileMetadata = z.record(z.string(), z.string()).superRefine((m, ctx) => {
  const problem = fileMetadataProblem(m);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
export type FileMetadata = z.infer<typeof FileMetadata>;

/** The `metadata` query parameter of an upload: a JSON object of string pairs. */
export const FileMetadataQuery = z
  .string()
  .max(16 * 1024)
  .transform((s, ctx) => {
    try {
      return JSON.parse(s) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'metadata must be a JSON object of strings' });
      return z.NEVER;
    }
  })
  .pipe(FileMetadata);
