/**
 * One control-plane replica's audit retention, as its own process, for
 * control-plane/replicas.int.test.ts: argv is the database URL and the
 * holder name; logs (JSON lines) go to stdout. Runs until killed.
 */
import { startAuditRetention } from '../control-plane/audit-retention.js';
import { createLogger } from '../shared/logger.js';
import { PgControlStore } from '../store/pg-control-store.js';

const [url, holder, everyMs, ttlMs] = process.argv.slice(2);
const logger = createLogger('info', (l) => process.stdout.write(`${l}\n`));
const store = await PgControlStore.open(url!);
startAuditRetention(store, 1, logger, { holder: holder!, everyMs: Number(everyMs), ttlMs: Number(ttlMs) });
logger.info('replica ready', { holder });
setInterval(() => {}, 1 << 30);
