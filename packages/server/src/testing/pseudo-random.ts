import { createCipheriv, createHash } from 'node:crypto';

/** Deterministic pseudo-random bytes (the AES-CTR keystream of a key made from `seed`): the same test data every run, fast. */
export function pseudoRandom(n: number, seed = 0): Buffer {
  const key = createHash('sha256').update(`seed-${seed}`).digest();
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(n));
}
