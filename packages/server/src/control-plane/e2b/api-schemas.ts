import { z } from 'zod';

/**
 * The E2B control plane's request bodies (its OpenAPI spec), as forkd reads
 * them. Objects are loose: newer SDKs send fields older servers ignore.
 */

const Seconds = z.number().int().min(0).max(30 * 86400);
const StringMap = z.record(z.string(), z.string());

export const NetworkConfig = z.looseObject({
  allowOut: z.array(z.string()).nullish(),
  denyOut: z.array(z.string()).nullish(),
  allowPublicTraffic: z.boolean().nullish(),
  maskRequestHost: z.string().nullish(),
  rules: z.record(z.string(), z.unknown()).nullish(),
  egressProxy: z.unknown().nullish(),
  httpsPorts: z.array(z.number()).nullish(),
  allow_internet_access: z.boolean().nullish(),
});
export type NetworkConfig = z.infer<typeof NetworkConfig>;

export const NewSandbox = z.looseObject({
  templateID: z.string().min(1).max(200),
  timeout: Seconds.optional(),
  secure: z.boolean().optional(),
  allow_internet_access: z.boolean().optional(),
  autoPause: z.boolean().optional(),
  autoPauseMemory: z.boolean().optional(),
  autoResume: z.looseObject({ enabled: z.boolean().optional() }).nullish(),
  metadata: StringMap.nullish(),
  envVars: StringMap.nullish(),
  network: NetworkConfig.nullish(),
  volumeMounts: z.array(z.unknown()).nullish(),
});
export type NewSandbox = z.infer<typeof NewSandbox>;

export const TimeoutBody = z.looseObject({ timeout: Seconds });
export const ConnectBody = z.looseObject({ timeout: Seconds.optional(), memory: z.boolean().optional() });
export const PauseBody = z.looseObject({ memory: z.boolean().optional() });
export const SnapshotBody = z.looseObject({ name: z.string().max(64).optional() });
export const ForkBody = z.looseObject({ count: z.number().int().min(1).optional(), timeout: Seconds.optional() });

/** What forkd cannot do yet: it has no egress control, so any rule that would restrict traffic is refused, not ignored. */
export function unsupportedNetwork(n: NetworkConfig | null | undefined, allowInternet?: boolean | null): string | undefined {
  if (allowInternet === false || n?.allow_internet_access === false) return 'allow_internet_access: false is not supported yet (forkd has no egress control)';
  if (!n) return undefined;
  if (n.denyOut?.length) return 'network.denyOut is not supported yet (forkd has no egress control)';
  if (n.allowOut?.length) return 'network.allowOut is not supported yet (forkd has no egress control)';
  if (n.rules && Object.keys(n.rules).length) return 'network.rules is not supported yet';
  if (n.egressProxy) return 'network.egressProxy is not supported yet';
  if (n.allowPublicTraffic === false) return 'network.allowPublicTraffic: false is not supported yet';
  if (n.maskRequestHost) return 'network.maskRequestHost is not supported yet';
  return undefined;
}
