import type { NodeCredential } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/node-service.js';
import { installCaCertificate } from './ca-trust.js';
import type { CredentialInterceptor } from './credential-interceptor.js';
import type { SandboxCas } from './sandbox-ca.js';

/**
 * The node's side of setCredentials: the sandbox trusts its CA before the
 * first credential is in force (so its first HTTPS request through the
 * proxy already verifies), then the interceptor holds the set in memory.
 */
export class NodeCredentials {
  readonly interceptor: CredentialInterceptor;
  readonly #cas: SandboxCas;

  constructor(interceptor: CredentialInterceptor, cas: SandboxCas) {
    this.interceptor = interceptor;
    this.#cas = cas;
  }

  async set(files: Pick<NodeService, 'readFile' | 'writeFile' | 'mkdir'>, id: string, creds: readonly NodeCredential[]): Promise<void> {
    if (creds.length > 0 && !this.#cas.installed(id)) {
      await installCaCertificate(files, id, await this.#cas.certificate(id));
      await this.#cas.markInstalled(id);
    }
    this.interceptor.set(id, creds);
  }

  /**
   * The sandbox's files went back to a snapshot (rewind), perhaps from before
   * its CA certificate was installed: installed again now if it has
   * credentials, otherwise at its next setCredentials.
   */
  async rewound(files: Pick<NodeService, 'readFile' | 'writeFile' | 'mkdir'>, id: string): Promise<void> {
    await this.#cas.clearInstalled(id);
    const creds = this.interceptor.credentials(id);
    if (creds.length > 0) await this.set(files, id, creds);
  }

  async forget(id: string): Promise<void> {
    this.interceptor.set(id, []);
    await this.#cas.remove(id);
  }
}
