import { z } from 'zod';

/**
 * `forkd doctor`'s verdicts: `error` blocks a feature (the command exits
 * non-zero), `warn` works worse than it could, `skip` was not checked (not
 * used by this configuration, or not readable by this user).
 */
export const DOCTOR_STATUSES = ['ok', 'warn', 'error', 'skip'] as const;
export const DoctorStatus = z.enum(DOCTOR_STATUSES);
export type DoctorStatus = z.infer<typeof DoctorStatus>;

/** One finding of one host check: what was found and, unless ok, how to fix it. */
export const DoctorFinding = z.strictObject({
  /** Stable id of the check (`kernel`, `cgroups`, `runc`, `pool-space`, …): what automation keys on. */
  check: z.string().regex(/^[a-z0-9-]{1,40}$/),
  status: DoctorStatus,
  /** What was found, one line. */
  summary: z.string().max(1000),
  /** What to do about it (absent when ok). */
  fix: z.string().max(1000).optional(),
});
export type DoctorFinding = z.infer<typeof DoctorFinding>;

/** `forkd doctor --json`. */
export const DoctorReport = z.strictObject({
  /** No finding is an error: every feature works on this host. */
  ok: z.boolean(),
  errors: z.number().int().min(0),
  warnings: z.number().int().min(0),
  findings: z.array(DoctorFinding),
});
export type DoctorReport = z.infer<typeof DoctorReport>;
