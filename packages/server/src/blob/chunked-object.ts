import { z } from 'zod';

/** The largest chunk a reader accepts (a manifest is untrusted: this bounds what one chunk costs in memory). */
export const MAX_CHUNK_BYTES = 64 << 20;

const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256: 64 lowercase hex digits');

/**
 * A byte stream stored as content-addressed chunks: its size, its chunks in
 * order, and `sha256`, the digest of that chunk list (chunked.ts,
 * objectDigest). Read back from a store it is untrusted input: parse it
 * with this schema before use (the chunk sizes must add up to `size`).
 */
export const ChunkedObjectSchema = z
  .object({
    size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    sha256: Sha256Hex,
    chunks: z.array(z.object({ sha256: Sha256Hex, size: z.number().int().min(1).max(MAX_CHUNK_BYTES) })).max(1 << 24),
  })
  .refine((o) => o.chunks.reduce((sum, c) => sum + c.size, 0) === o.size, { message: 'chunk sizes do not add up to size' });

export type ChunkedObject = z.infer<typeof ChunkedObjectSchema>;
