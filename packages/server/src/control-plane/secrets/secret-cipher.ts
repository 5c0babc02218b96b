import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { closeSync, constants, openSync, readFileSync, writeSync } from 'node:fs';
import { ForkdError } from '@forkd/protocol';

const VERSION = 1;
const IV = 12;
const TAG = 16;

/**
 * Seals secret values at rest: AES-256-GCM with a fresh IV each time, the
 * tenant and name as associated data (a sealed value moved to another row
 * does not open). Layout: version byte, IV, tag, ciphertext.
 */
export class SecretCipher {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new ForkdError('INTERNAL', 'secret key must be 32 bytes');
    this.#key = key;
  }

  seal(value: string, aad: string): Buffer {
    const iv = randomBytes(IV);
    const c = createCipheriv('aes-256-gcm', this.#key, iv);
    c.setAAD(Buffer.from(aad));
    const body = Buffer.concat([c.update(value, 'utf8'), c.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, c.getAuthTag(), body]);
  }

  /** Throws INTERNAL (never the value or the key) when the bytes were not sealed with this key for `aad`. */
  open(sealed: Buffer, aad: string): string {
    if (sealed.length < 1 + IV + TAG || sealed[0] !== VERSION) throw new ForkdError('INTERNAL', 'sealed secret is malformed');
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, sealed.subarray(1, 1 + IV));
      d.setAAD(Buffer.from(aad));
      d.setAuthTag(sealed.subarray(1 + IV, 1 + IV + TAG));
      return Buffer.concat([d.update(sealed.subarray(1 + IV + TAG)), d.final()]).toString('utf8');
    } catch {
      throw new ForkdError('INTERNAL', 'sealed secret does not open with this server\'s key');
    }
  }
}

/**
 * The secret key file: 32 random bytes, made once (owner-only, 0600, created
 * exclusively so two starts cannot each write one), read on every start.
 */
export function loadSecretKey(file: string): Buffer {
  try {
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      writeSync(fd, randomBytes(32));
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = readFileSync(file);
  if (key.length !== 32) throw new ForkdError('INTERNAL', `secret key file ${file} is not 32 bytes`);
  return key;
}
