import { createInterface } from 'node:readline';
import { spawnStream } from '../../shared/exec.js';
import type { Logger } from '../../shared/logger.js';
import { firewallChanged } from './host-firewall.js';

/** What a line of `nft monitor tables` says of forkd's table: gone (deleted alone, or by a `flush ruleset`), or nothing. */
export function tableGone(line: string, table: string): boolean {
  const l = line.trim();
  return l === `delete table inet ${table}` || l.startsWith(`delete table inet ${table} `) || l === 'flush ruleset';
}

export interface TableWatchOptions {
  table: string;
  /** Re-makes the table and every sandbox's rules (the start-up check's work, without a restart). */
  restore(): Promise<void>;
  /** The host firewall's iptables filter table changed (a reload, a rule removed): forkd's accepts made again (host-firewall.ts). */
  firewall?(): Promise<void>;
  logger: Logger;
  /** Waits for a burst of deletions (a firewall reload) to end: one restore for it. */
  settleMs?: number;
}

/**
 * Watches for forkd's nftables table being removed by someone else (a host
 * firewall reload running `flush ruleset`, an admin's `nft delete table`)
 * and restores it at once, and for a host firewall's iptables chains being
 * reloaded (forkd's accepts in them made again): an event stream (`nft
 * monitor`), not polling. Until the restore, egress traffic fails closed (the veths'
 * blackhole routes; ARCHITECTURE "Network"). A monitor that dies is
 * started again after a pause.
 */
export class TableWatch {
  readonly #o: TableWatchOptions;
  #kill: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #fwTimer: NodeJS.Timeout | undefined;
  #restoring: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(o: TableWatchOptions) {
    this.#o = o;
  }

  start(): void {
    if (this.#closed) return;
    // Dies with the daemon (a kill -9 left it behind, orphaned, until the next table event's SIGPIPE).
    const m = spawnStream('setpriv', ['--pdeathsig', 'KILL', '--', 'nft', 'monitor']);
    this.#kill = m.kill;
    // Its end (killed at close, or dead) is `exit`'s: a stream error must never become the daemon's uncaught one.
    m.stream.on('error', () => {});
    createInterface({ input: m.stream }).on('line', (line) => {
      if (tableGone(line, this.#o.table)) this.#schedule();
      else if (this.#o.firewall && firewallChanged(line)) this.#scheduleFirewall();
    });
    void m.exit.then(({ code, stderr }) => {
      if (this.#closed) return;
      this.#o.logger.warn('nft monitor ended: forkd table watch restarts in 5 s', { code, stderr: stderr.slice(-300) });
      setTimeout(() => this.start(), 5000).unref();
    });
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#restoring = this.#restoring.then(async () => {
        if (this.#closed) return;
        this.#o.logger.warn('forkd nftables table removed by someone else: restoring it and every sandbox\'s rules', { table: this.#o.table });
        await this.#o.restore().catch((err: unknown) => this.#o.logger.warn('nftables restore failed', { error: String(err) }));
        await this.#o.firewall?.();
      });
    }, this.#o.settleMs ?? 200);
  }

  #scheduleFirewall(): void {
    clearTimeout(this.#fwTimer);
    this.#fwTimer = setTimeout(() => {
      this.#restoring = this.#restoring.then(async () => {
        if (!this.#closed) await this.#o.firewall?.();
      });
    }, this.#o.settleMs ?? 200);
  }

  /** Resolves when a restore in progress (if any) is done (tests). */
  settled(): Promise<void> {
    return this.#restoring;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#fwTimer);
    this.#kill?.();
    await this.#restoring;
  }
}
