/**
 * The syntax of secret names, grant hosts and header templates, without the
 * schemas (zod) around them: the CLI checks a `--grant` with these and loads
 * no schemas for an exec (secrets.ts holds the schemas).
 */
export const SECRET_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/;

/** CR, LF and NUL would split or end a header: such a value can never be injected. */
export const HEADER_UNSAFE = /[\r\n\0]/;

const HOST_LABELS = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * The ports a grant can act on: only TCP 80 and 443 reach the egress proxy
 * (egress-nft.ts); a grant for any other port would silently inject nothing,
 * so it is refused. A grant host without a port covers both.
 */
export const GRANT_PORTS = [80, 443];

/** Why `pattern` (`host[:port]` or `*.suffix[:port]`) is not a grant host, or undefined when it is one. */
export function grantHostError(pattern: string): string | undefined {
  const m = /^([^:]+)(?::(\d{1,5}))?$/.exec(pattern);
  if (!m) return `${pattern}: expected host[:port]`;
  const host = m[1]!;
  if (host.length > 253 || !HOST_LABELS.test(host)) return `${pattern}: not a lower-case host name (or *.suffix)`;
  if (m[2] !== undefined && !GRANT_PORTS.includes(Number(m[2]))) return `${pattern}: a grant covers ports 80 and 443 only (the egress proxy's); without a port it covers both`;
  return undefined;
}

/** RFC 9110 token. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A header template split into name and value template, or why it is not one. */
export function parseHeaderTemplate(template: string): { name: string; value: string } | string {
  if (HEADER_UNSAFE.test(template)) return 'header template contains CR, LF or NUL';
  const i = template.indexOf(':');
  if (i <= 0) return "header template must be 'Name: value with {secret}'";
  const name = template.slice(0, i).trim();
  const value = template.slice(i + 1).trim();
  if (!HEADER_NAME.test(name)) return `invalid header name ${JSON.stringify(name)}`;
  if (['host', 'content-length', 'transfer-encoding', 'connection'].includes(name.toLowerCase())) return `header ${name} cannot be injected`;
  if (!value.includes('{secret}')) return 'header template has no {secret}';
  return { name, value };
}
