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
