import { randomBytes } from 'node:crypto';
import { SecretCipher } from '../control-plane/secrets/secret-cipher.js';

/** A cipher with a fresh random key, for control planes tests assemble by hand. */
export const testCipher = (): SecretCipher => new SecretCipher(randomBytes(32));
