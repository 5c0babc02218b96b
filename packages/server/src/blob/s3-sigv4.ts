import { createHash, createHmac } from 'node:crypto';

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials' token, sent (and signed) as x-amz-security-token. */
  sessionToken?: string | undefined;
}

export interface SigV4Request {
  method: string;
  /** The Host header's value (host, with `:port` unless the scheme's default). */
  host: string;
  /** The path, not yet encoded: each `/`-separated segment is encoded here, once (S3's rule; no normalisation). */
  path: string;
  /** Query parameters, not yet encoded. */
  query?: readonly (readonly [string, string])[];
  /** Headers to sign besides host and x-amz-date (names any case). */
  headers?: Readonly<Record<string, string>>;
  /** Hex sha256 of the body (or UNSIGNED-PAYLOAD). */
  payloadHash: string;
}

export interface SigV4Scope {
  region: string;
  service: string;
}

export interface SignedRequest {
  /** Every header to send: the request's own, host, x-amz-date, the token, authorization. */
  headers: Record<string, string>;
  canonicalRequest: string;
  stringToSign: string;
  signature: string;
}

export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** RFC 3986 encoding as SigV4 wants it: only A-Z a-z 0-9 - . _ ~ kept (and `/` when `keepSlash`). */
export function uriEncode(s: string, keepSlash = false): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The query as it goes on the wire and into the canonical request: names and values encoded, sorted by name then value. */
export function canonicalQuery(query: readonly (readonly [string, string])[] = []): string {
  return query
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/** `20130524T000000Z`. */
export function amzDate(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/**
 * AWS Signature Version 4, header form (docs.aws.amazon.com, "Signature
 * Version 4 signing process"), for S3: the path encoded once and not
 * normalised. Checked against AWS's published examples in s3-sigv4.test.ts.
 */
export function signV4(req: SigV4Request, creds: SigV4Credentials, scope: SigV4Scope, now: Date): SignedRequest {
  const date = amzDate(now);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = v;
  headers.host = req.host;
  headers['x-amz-date'] = date;
  if (creds.sessionToken) headers['x-amz-security-token'] = creds.sessionToken;
  const names = Object.keys(headers).sort();
  const canonicalHeaders = names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [req.method, uriEncode(req.path, true), canonicalQuery(req.query), canonicalHeaders, signedHeaders, req.payloadHash].join('\n');
  const credentialScope = `${date.slice(0, 8)}/${scope.region}/${scope.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', date, credentialScope, createHash('sha256').update(canonicalRequest, 'utf8').digest('hex')].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${creds.secretAccessKey}`, date.slice(0, 8)), scope.region), scope.service), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${credentialScope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return { headers, canonicalRequest, stringToSign, signature };
}
