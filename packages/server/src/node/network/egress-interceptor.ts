import type { SecureContext } from 'node:tls';

/** One request a sandbox makes through the egress proxy, as the proxy forwards it. */
export interface OutboundRequest {
  /** The name the request is for (Host header or TLS SNI), lower-case, without the port. */
  host: string;
  port: number;
  /** Upper-case. */
  method: string;
  /** The request target's path and query, as sent (a grant's path limits match its normalized form). */
  path: string;
  /** The request's headers as sent (lower-case names): what may change the method upstream (X-HTTP-Method-Override). */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** Whether the sandbox spoke TLS (terminated by the proxy) for it. */
  tls: boolean;
}

/**
 * The seam between the egress proxy (which owns sockets, DNS, domain rules
 * and forwarding) and whatever adds credentials to a sandbox's requests (just-
 * in-time secrets). The proxy asks it per connection whether TLS must be
 * terminated or HTTP parsed, and per request which headers to add; an interceptor never
 * sees a socket. `sandboxId` is the sandbox's id (not a runtime instance's).
 */
export interface EgressInterceptor {
  /**
   * Whether connections from `sandboxId` to host:port are to be opened up
   * (some credential may apply to a request there): TLS on 443 terminated,
   * plain HTTP on 80 parsed request by request. Elsewhere the proxy splices.
   */
  terminates(sandboxId: string, host: string, port: number): boolean;
  /** The context (a certificate for `host` signed by the sandbox's CA, which the sandbox trusts) to terminate with. */
  tlsContext(sandboxId: string, host: string): Promise<SecureContext>;
  /** Headers to set on one request (replacing any of the same name the sandbox sent). Called per request, so a revocation applies to the next one. */
  headers(sandboxId: string, req: OutboundRequest): Array<[name: string, value: string]>;
}
