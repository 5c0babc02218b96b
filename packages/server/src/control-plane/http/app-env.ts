import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';
import type { OpenStreams } from '../../shared/open-streams.js';
import type { Principal } from '../auth/api-keys.js';

/** What the middleware leaves on a request's context for the handlers (and the audit record). */
export type AppEnv = {
  Variables: {
    who: Principal;
    /** The caller's tenant-scoped view of the node. */
    view: NodeService;
    /** What the audit record names as the call's target, when the path and query do not say it. */
    target: string | undefined;
    /** The sandbox the audit record files the call under, when the path does not say it. */
    sandbox: string | undefined;
    requestId: string;
    logger: Logger;
    /** The process streams open to clients, ended cleanly when the daemon stops. */
    streams: OpenStreams;
  };
};
