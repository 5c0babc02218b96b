import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ControlStore } from '../../store/control-store.js';

/** 192 random bits, URL-safe: it travels in headers, query strings and cookies. */
function newToken(): string {
  return randomBytes(24).toString('base64url');
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * Mints a sandbox's port-proxy token (replacing any earlier one) and keeps
 * only its SHA-256: like API keys, 192 random bits need no slow hash, and a
 * leaked control.db opens no sandbox. The plain token is returned once.
 */
export async function mintProxyToken(store: ControlStore, sandboxId: string): Promise<string> {
  const token = newToken();
  await store.setTokenHash(sandboxId, hashToken(token));
  return token;
}

/** Whether `presented` is the sandbox's token (constant-time on the hashes). */
export async function proxyTokenMatches(store: ControlStore, sandboxId: string, presented: string): Promise<boolean> {
  const expected = await store.tokenHash(sandboxId);
  if (!expected || presented.length > 200) return false;
  return timingSafeEqual(Buffer.from(hashToken(presented), 'hex'), Buffer.from(expected, 'hex'));
}
