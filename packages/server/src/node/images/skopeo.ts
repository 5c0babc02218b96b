import { ForkdError, formatImageRef, skopeoImageName, type ImageRef, type RegistryAuth } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import type { Logger } from '../../shared/logger.js';
import { skopeoAccessArgs, skopeoEnv, type RegistryAccess } from './registry-access.js';
import { parsePullSize } from './image-config.js';

const INSPECT_TIMEOUT_MS = 120_000;
const COPY_TIMEOUT_MS = 30 * 60_000;

export interface SkopeoCall {
  ref: ImageRef;
  access: RegistryAccess;
  auth?: RegistryAuth | undefined;
  /** A private directory of this pull's (credentials, skopeo's home and temporary files). */
  privateDir: string;
  logger: Logger;
}

/** The image's config blob (the platform skopeo picks for linux/amd64 from an index). */
export async function inspectConfig(c: SkopeoCall): Promise<string> {
  const args = ['--insecure-policy', 'inspect', '--config', '--raw', ...(await skopeoAccessArgs(c.ref, c.access, c.privateDir, c.auth, '')), skopeoImageName(c.ref)];
  return (await run(c, args, INSPECT_TIMEOUT_MS)).stdout;
}

/**
 * The bytes a copy of the image reads (its linux/amd64 manifest's layers and
 * config, as the registry states them), for a pull's estimate. Undefined
 * when they cannot be known: never a reason for a pull to fail.
 */
export async function pullBytes(c: SkopeoCall): Promise<number | undefined> {
  const raw = async (ref: ImageRef) => parsePullSize((await run(c, ['--insecure-policy', 'inspect', '--raw', ...(await skopeoAccessArgs(ref, c.access, c.privateDir, c.auth, '')), skopeoImageName(ref)], INSPECT_TIMEOUT_MS)).stdout);
  try {
    const top = await raw(c.ref);
    if (!top.ok) return undefined;
    if (top.value.kind === 'bytes') return top.value.bytes;
    if (c.ref.kind !== 'registry' || !top.value.amd64) return undefined;
    const one = await raw({ ...c.ref, digest: top.value.amd64 });
    return one.ok && one.value.kind === 'bytes' ? one.value.bytes : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Copies the image into `dir` in skopeo's `dir:` layout with every layer
 * decompressed (a layer blob is then its diff id's bytes, checked before
 * use) and the manifest in OCI form. Signatures are not checked (no policy
 * of the operator's applies): what is pulled is what the reference names.
 */
export async function copyToDir(c: SkopeoCall, dir: string, onSpawn?: (pid: number) => void): Promise<void> {
  const access = await skopeoAccessArgs(c.ref, c.access, c.privateDir, c.auth, 'src-');
  await run(c, ['--insecure-policy', 'copy', '--quiet', '--remove-signatures', '--format', 'oci', '--dest-decompress', ...access, skopeoImageName(c.ref), `dir:${dir}`], COPY_TIMEOUT_MS, onSpawn);
}

async function run(c: SkopeoCall, args: string[], timeoutMs: number, onSpawn?: (pid: number) => void): Promise<{ stdout: string }> {
  try {
    return await exec('skopeo', args, { env: skopeoEnv(c.privateDir), timeoutMs, cwd: c.privateDir, onSpawn });
  } catch (err) {
    throw skopeoError(err, c);
  }
}

/**
 * What a failed pull tells its caller: a stable code and a sentence. The
 * tool's stderr (which may name internal hosts) goes to the server's log.
 */
export function skopeoError(err: unknown, c: Pick<SkopeoCall, 'ref' | 'logger'>): ForkdError {
  const stderr = err instanceof ForkdError ? String(err.details?.stderrTail ?? '') : String(err);
  const name = formatImageRef(c.ref);
  c.logger.warn('image pull failed', { image: name, error: err instanceof Error ? err.message : String(err), stderr: stderr.slice(-2000) });
  if (err instanceof ForkdError && err.code === 'TIMEOUT') return new ForkdError('TIMEOUT', `pulling ${name} took too long`);
  // The reference itself (a registry on port 40357, a repository named denied) says nothing of what went wrong.
  const own = [name, ...(c.ref.kind === 'registry' ? [c.ref.registry, c.ref.repository] : [])].map((w) => w.toLowerCase());
  const s = own.reduce((text, w) => text.split(w).join(' '), stderr.toLowerCase());
  if (/unauthorized|authentication required|denied|forbidden|\b40[13]\b/.test(s)) return new ForkdError('PERMISSION_DENIED', `the registry refused access to ${name} (check the credentials)`);
  if (/manifest unknown|name unknown|not found|no such file|does not exist|\b404\b/.test(s)) return new ForkdError('NOT_FOUND', `image ${name} not found`);
  if (/http response to https client|server gave http response/.test(s)) return new ForkdError('FAILED_PRECONDITION', `the registry of ${name} speaks plain HTTP; an operator may list it in FORKD_INSECURE_REGISTRIES`);
  if (/x509|certificate/.test(s)) return new ForkdError('FAILED_PRECONDITION', `the registry of ${name} has a certificate this server does not trust`);
  if (/no image found|choosing an image from manifest list|no matching manifest/.test(s)) return new ForkdError('FAILED_PRECONDITION', `image ${name} has no linux/amd64 variant`);
  if (/connection refused|no such host|i\/o timeout|network is unreachable|dial tcp|lookup /.test(s)) return new ForkdError('UNAVAILABLE', `cannot reach the registry of ${name}`);
  return new ForkdError('INTERNAL', `pulling ${name} failed`);
}
