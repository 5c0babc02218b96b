export { loadConfig, REPO_ROOT, type ForkdConfig } from './shared/config.js';
export { createLogger, silentLogger, type Logger } from './shared/logger.js';
export { exec } from './shared/exec.js';
export { setup, startDaemon, type Daemon } from './daemon.js';
export { setupHost, criuPath, baseRootfsDir, type Progress } from './setup/setup.js';
export { openNode, type Node } from './node/node.js';
export { SandboxManager } from './node/manager/sandbox-manager.js';
export { createApp } from './control-plane/http/app.js';
export { listen } from './control-plane/http/server.js';
