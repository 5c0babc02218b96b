import { z } from 'zod';
import { grantHostError, HEADER_NAME, HEADER_UNSAFE, parseHeaderTemplate, SECRET_NAME_PATTERN } from './grant-syntax.js';

export { GRANT_PORTS, grantHostError, HEADER_UNSAFE, parseHeaderTemplate, SECRET_NAME_PATTERN } from './grant-syntax.js';

/**
 * Just-in-time secrets: a tenant's named values, stored encrypted, that the
 * egress proxy adds to a sandbox's outbound requests as a header, by grant.
 * No answer ever carries a value.
 */
export const SecretName = z.string().regex(SECRET_NAME_PATTERN, 'invalid secret name: a letter or _, then letters, digits, _ . - (at most 128)');

export const SetSecretRequest = z.strictObject({
  value: z
    .string()
    .min(1, 'empty secret value')
    .max(64 * 1024, 'secret value over 64 KiB')
    .refine((v) => !HEADER_UNSAFE.test(v), 'secret value contains CR, LF or NUL (it could not be sent in a header)'),
});
export type SetSecretRequest = z.infer<typeof SetSecretRequest>;

export const SecretInfo = z.object({ name: z.string(), createdAt: z.string(), updatedAt: z.string() });
export type SecretInfo = z.infer<typeof SecretInfo>;

export const GrantHost = z
  .string()
  .max(260)
  .transform((v) => v.toLowerCase())
  .superRefine((v, ctx) => {
    const err = grantHostError(v);
    if (err) ctx.addIssue({ code: 'custom', message: err });
  });

export const HeaderTemplate = z
  .string()
  .max(1024)
  .superRefine((v, ctx) => {
    const r = parseHeaderTemplate(v);
    if (typeof r === 'string') ctx.addIssue({ code: 'custom', message: r });
  });

const HTTP_METHOD = z
  .string()
  .transform((v) => v.toUpperCase())
  .pipe(z.string().regex(/^[A-Z]{1,16}$/, 'invalid HTTP method'));
const PATH_PREFIX = z.string().max(1024).regex(/^\/[^\s]*$/, 'a path prefix starts with / and has no spaces');

/** What a grant binds: a secret, the destinations, the header. */
export const GrantSpec = z.strictObject({
  secret: SecretName,
  hosts: z.array(GrantHost).min(1).max(64),
  methods: z.array(HTTP_METHOD).max(16).optional(),
  paths: z.array(PATH_PREFIX).max(64).optional(),
  header: HeaderTemplate,
});
export type GrantSpec = z.infer<typeof GrantSpec>;
export type GrantSpecInput = z.input<typeof GrantSpec>;

/** `POST /v1/sandboxes/{id}/grants`. */
export const CreateGrantRequest = GrantSpec.extend({
  /** Seconds from now; absent: until removed (or the sandbox is deleted). */
  ttlSeconds: z
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 3600)
    .optional(),
});
export type CreateGrantRequest = z.input<typeof CreateGrantRequest>;
/** A CreateGrantRequest as validated (hosts lower-cased, methods upper-cased). */
export type ValidGrantRequest = z.infer<typeof CreateGrantRequest>;

export const GRANT_ID_PATTERN = /^grt-[0-9a-f]{16}$/;
export const GrantInfo = z.object({
  id: z.string(),
  sandboxId: z.string(),
  secret: z.string(),
  hosts: z.array(z.string()),
  methods: z.array(z.string()).optional(),
  paths: z.array(z.string()).optional(),
  /** The template, as given: never the value. */
  header: z.string(),
  createdAt: z.string(),
  expiresAt: z.string().optional(),
  /** Exists only while one exec call runs. */
  perCall: z.boolean().optional(),
});
export type GrantInfo = z.infer<typeof GrantInfo>;

/**
 * What a node holds for one grant: the header already resolved (the node
 * never sees the store, the key or a template). In memory only.
 */
export const NodeCredential = z.strictObject({
  grantId: z.string().max(64),
  secret: z.string().max(128),
  hosts: z.array(z.string().max(260)).max(64),
  methods: z.array(z.string().max(16)).max(16).optional(),
  paths: z.array(z.string().max(1024)).max(64).optional(),
  headerName: z.string().regex(HEADER_NAME),
  headerValue: z
    .string()
    .max(80 * 1024)
    .refine((v) => !HEADER_UNSAFE.test(v)),
  /** ISO time; the node refuses to use it from then on. */
  expiresAt: z.string().optional(),
});
export type NodeCredential = z.infer<typeof NodeCredential>;
export const SetCredentialsRequest = z.strictObject({ credentials: z.array(NodeCredential).max(256) });
