/** What a returned node's sandboxes came to (see returned-nodes.ts). */
export type ReturnOutcome = 'reclaimed' | 'merged' | 'kept' | 'discarded';

const OUTCOMES: readonly ReturnOutcome[] = ['reclaimed', 'merged', 'kept', 'discarded'];

/**
 * Counters of the fleet's own jobs in this control-plane process, for
 * `/metrics`: the job runs on whichever replica holds its lease, so each
 * replica counts what it did and Prometheus sums them.
 */
export class FleetCounters {
  #returnedNodes = 0;
  readonly #sandboxes = new Map<ReturnOutcome, number>(OUTCOMES.map((o) => [o, 0]));

  nodeReturned(): void {
    this.#returnedNodes++;
  }

  sandbox(outcome: ReturnOutcome): void {
    this.#sandboxes.set(outcome, (this.#sandboxes.get(outcome) ?? 0) + 1);
  }

  get returnedNodes(): number {
    return this.#returnedNodes;
  }

  count(outcome: ReturnOutcome): number {
    return this.#sandboxes.get(outcome) ?? 0;
  }

  /** Prometheus text. */
  render(): string {
    return [
      '# HELP forkd_fleet_returned_nodes_total Lost nodes that were heard from again and reconciled by this replica.',
      '# TYPE forkd_fleet_returned_nodes_total counter',
      `forkd_fleet_returned_nodes_total ${this.#returnedNodes}`,
      '# HELP forkd_fleet_returned_sandboxes_total Sandboxes a returned node held, by outcome: reclaimed (never restored elsewhere: served from it again), merged (a stale copy of one restored elsewhere: its snapshots joined that timeline and the copy was deleted), kept (a stale copy left paused on the node: merging it failed), discarded (a stale copy of one deleted while the node was lost: deleted too).',
      '# TYPE forkd_fleet_returned_sandboxes_total counter',
      ...OUTCOMES.map((o) => `forkd_fleet_returned_sandboxes_total{outcome="${o}"} ${this.count(o)}`),
    ].join('\n') + '\n';
  }
}
