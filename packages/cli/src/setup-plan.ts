import type { DurationMemory } from './duration-memory.js';
import type { PlannedStep } from './step-plan.js';

/**
 * The plan a run of `kind` is shown against: its last run's steps and
 * durations when there was one, else the typical figures given.
 */
export function planFor(memory: DurationMemory, kind: string, typical: readonly { name: string; typicalMs: number }[]): PlannedStep[] {
  const last = memory.last(kind);
  if (last?.length) return last.map((s) => ({ name: s.name, expectedMs: s.ms }));
  return typical.map((s) => ({ name: s.name, expectedMs: s.typicalMs }));
}
