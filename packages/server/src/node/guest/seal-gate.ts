import { ForkdError } from '@forkd/protocol';
import { withTimeout } from '../../shared/with-timeout.js';

/** How long a call waits for a start or restore to seal the agent's directory. */
const SEAL_WAIT_MS = 60_000;

/**
 * Whether a connection to the agent may be made yet. The socket lives in
 * the sandbox's root, at a path the sandbox could otherwise replace with a
 * symlink to a host socket, and a connect() follows symlinks. A check before
 * the connect (lstat) would be a race; instead nothing connects until the
 * directory is sealed: the root is forkd's volume, `.forkd` a direct child
 * of it, and an immutable directory can be neither renamed, removed nor
 * replaced, nor can its entries change (the sandbox lacks
 * CAP_LINUX_IMMUTABLE; the kernel's may_delete refuses an immutable victim).
 * So once forkd-rootfs-ops has sealed it (resolving it with openat2, no
 * symlinks) and found a socket in it, `<root>/.forkd/agent.sock` names that
 * socket until forkd itself unseals the directory, which it announces with
 * `unsealing`. A client made for an instance already running (a daemon
 * restart) checks the seal once (`verify`) before its first connect; without
 * `verify` (an agent outside any sandbox, in tests) the channel is trusted.
 */
export class SealGate {
  readonly #verify: (() => Promise<void>) | undefined;
  /** The directory is known sealed. */
  #trusted: boolean;
  #verifying: Promise<void> | undefined;
  /** Set while forkd has the directory unsealed (start, restore): connections wait for the seal. */
  #sealing: { done: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined;

  constructor(verify: (() => Promise<void>) | undefined) {
    this.#verify = verify;
    this.#trusted = !verify;
  }

  unsealing(): void {
    this.#trusted = false;
    if (this.#sealing) return;
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    const done = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    done.catch(() => {});
    this.#sealing = { done, resolve, reject };
  }

  sealed(): void {
    this.#trusted = true;
    this.#sealing?.resolve();
    this.#sealing = undefined;
  }

  sealFailed(err: unknown): void {
    this.#trusted = false;
    this.#sealing?.reject(err);
    this.#sealing = undefined;
  }

  /** Resolves once a connection may be made: the seal is known, waited for, or checked. */
  async ready(): Promise<void> {
    while (!this.#trusted) {
      if (this.#sealing) {
        await withTimeout(this.#sealing.done, SEAL_WAIT_MS, () => new ForkdError('UNAVAILABLE', 'the guest agent is not ready'));
        continue;
      }
      this.#verifying ??= this.#verify!()
        .then(() => {
          this.#trusted = true;
        })
        .finally(() => (this.#verifying = undefined));
      await this.#verifying;
    }
  }
}
