import type { SandboxInfo } from '@forkd/protocol';

/**
 * forkd's SandboxInfo in E2B's shapes (Sandbox, SandboxDetail,
 * ListedSandbox). What E2B keeps about a sandbox that forkd has no field for
 * (autoResume) rides in one reserved metadata key, never shown to E2B callers.
 */

/**
 * The envd version advertised: it gates SDK features. 0.6.4: watch entries
 * (0.6.3) and network-mount watches (0.6.4) work; file metadata (0.6.2, xattrs)
 * is the one gated feature forkd lacks, and uploads carrying it are refused.
 */
export const ENVD_VERSION = '0.6.4';
/** Deprecated in E2B's API, still required: the reference answers this constant. */
export const CLIENT_ID = '6532622b';
/** E2B's default lifetime when a create or connect names none (seconds). */
export const DEFAULT_TIMEOUT_S = 300;

export const E2B_META_KEY = 'forkd.e2b';

export interface E2bAttributes {
  autoResume: boolean;
  /** The templateID the sandbox was created from (a snapshot id, for one made from a snapshot). */
  templateID?: string | undefined;
}

export function e2bAttributes(s: SandboxInfo): E2bAttributes | undefined {
  const raw = s.metadata[E2B_META_KEY];
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<E2bAttributes>;
    return { autoResume: v.autoResume === true, ...(typeof v.templateID === 'string' ? { templateID: v.templateID } : {}) };
  } catch {
    return undefined;
  }
}

export function attributesMetadata(a: E2bAttributes): Record<string, string> {
  return { [E2B_META_KEY]: JSON.stringify(a) };
}

/** The caller's metadata: without forkd's reserved key. */
export function userMetadata(s: SandboxInfo): Record<string, string> {
  const { [E2B_META_KEY]: _, ...rest } = s.metadata;
  return rest;
}

export type E2bState = 'running' | 'paused';

/** Sandboxes being stopped or failed are gone as far as E2B is concerned. */
export function e2bState(s: SandboxInfo): E2bState | undefined {
  if (s.state === 'running' || s.state === 'creating') return 'running';
  if (s.state === 'paused') return 'paused';
  return undefined;
}

export function templateId(s: SandboxInfo): string {
  return e2bAttributes(s)?.templateID ?? s.template;
}

export function endAt(s: SandboxInfo): string {
  return s.expiresAt ?? new Date(Date.parse(s.createdAt) + 30 * 86400_000).toISOString();
}

/**
 * How the SDK reaches a sandbox: its envd token, its traffic token (ports
 * only) and, when forkd serves `{port}-{id}.{domain}` over HTTPS, the domain
 * (null: the SDK's own E2B_DOMAIN).
 */
export interface SandboxReach {
  envdAccessToken: string;
  trafficAccessToken: string;
  domain: string | null;
}

/** The answer of create, connect and fork. */
export function sandboxBody(s: SandboxInfo, reach: SandboxReach): Record<string, unknown> {
  return { sandboxID: s.id, templateID: templateId(s), clientID: CLIENT_ID, envdVersion: ENVD_VERSION, ...reach };
}

export function listedBody(s: SandboxInfo): Record<string, unknown> {
  return {
    sandboxID: s.id,
    templateID: templateId(s),
    clientID: CLIENT_ID,
    startedAt: s.createdAt,
    endAt: endAt(s),
    cpuCount: Math.max(1, Math.round(s.limits.cpus)),
    memoryMB: s.limits.memoryMb,
    diskSizeMB: s.limits.diskMb ?? 0,
    state: e2bState(s) ?? 'running',
    envdVersion: ENVD_VERSION,
    metadata: userMetadata(s),
  };
}

export function detailBody(s: SandboxInfo, reach: SandboxReach): Record<string, unknown> {
  return {
    ...listedBody(s),
    envdAccessToken: reach.envdAccessToken,
    domain: reach.domain,
    allowInternetAccess: true,
    lifecycle: { onTimeout: s.onTimeout === 'kill' ? 'kill' : 'pause', autoResume: e2bAttributes(s)?.autoResume ?? false },
  };
}
