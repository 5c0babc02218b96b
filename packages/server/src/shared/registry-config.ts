/**
 * How this node reaches registries, the operator's choice: a containers
 * auth file (FORKD_REGISTRY_AUTH_FILE, `{"auths": {...}}` as podman and
 * skopeo write it) and the registries spoken to over plain HTTP or with
 * unverified TLS (FORKD_INSECURE_REGISTRIES, `host[:port]`, comma-separated).
 */
export interface RegistryAccess {
  authFile?: string | undefined;
  insecure: readonly string[];
}

export function registryAccessFromEnv(env: NodeJS.ProcessEnv): RegistryAccess {
  const insecure = (env.FORKD_INSECURE_REGISTRIES ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  for (const h of insecure) if (!/^[a-z0-9.-]+(:\d{1,5})?$/.test(h)) throw new Error(`FORKD_INSECURE_REGISTRIES: ${JSON.stringify(h)} is not host[:port]`);
  return { authFile: env.FORKD_REGISTRY_AUTH_FILE || undefined, insecure };
}
