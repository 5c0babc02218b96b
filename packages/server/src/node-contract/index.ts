export type { NodeService } from './node-service.js';
export type * from './node-types.js';
export { spawnOptions } from './spawn-options.js';
export { forwardTo } from './forward-to.js';
