import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { UUID_PATTERN } from './transfer-manifest.js';

export interface SubvolumeIdentity {
  uuid: string;
  /** Set on a volume made by `btrfs receive`: the UUID of the volume it was sent from. */
  receivedUuid: string | undefined;
  readOnly: boolean;
}

/**
 * What a send stream calls a volume: its received UUID when it was itself
 * received (so a template passed from node to node keeps one name
 * everywhere), else its own UUID. `btrfs receive` finds an incremental
 * stream's parent by exactly this.
 */
export function sendIdentity(id: SubvolumeIdentity): string {
  return id.receivedUuid ?? id.uuid;
}

/** The identity of the volume at `path`; undefined when it is not a subvolume. */
export async function subvolumeIdentity(path: string): Promise<SubvolumeIdentity | undefined> {
  const r = await exec('btrfs', ['subvolume', 'show', path], { allowFailure: true });
  if (r.code !== 0) return undefined;
  return parseSubvolumeShow(r.stdout);
}

/** `btrfs subvolume show`'s `UUID:`, `Received UUID:` and `Flags:` lines (`-` for none). */
export function parseSubvolumeShow(text: string): SubvolumeIdentity {
  const field = (name: string) => new RegExp(`^\\s*${name}:\\s*(\\S*)\\s*$`, 'm').exec(text)?.[1];
  const uuid = field('UUID');
  if (!uuid || !UUID_PATTERN.test(uuid)) throw new ForkdError('INTERNAL', 'btrfs subvolume show printed no UUID');
  const received = field('Received UUID');
  const flags = /^\s*Flags:\s*(.*)$/m.exec(text)?.[1] ?? '';
  return { uuid, receivedUuid: received && UUID_PATTERN.test(received) ? received : undefined, readOnly: /\breadonly\b/.test(flags) };
}
