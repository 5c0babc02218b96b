// The browser loads @forkd/protocol's own module at this URL (assets.json); Node (the unit tests) follows this re-export.
export { StreamPosition } from '@forkd/protocol/stream-position';
export type { ResumePoint } from '@forkd/protocol/stream-position';
