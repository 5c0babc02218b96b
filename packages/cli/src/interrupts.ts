const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const;

/**
 * While a remote process runs in the foreground, signals sent to forkd go to
 * it instead (Ctrl-C stops the remote command, like a local one). A second
 * Ctrl-C gives up waiting and exits 130; the process is then detached.
 * Returns the function that restores the default handling.
 */
export function forwardInterrupts(forward: (signal: string) => void): () => void {
  let interrupts = 0;
  const handlers = FORWARDED.map((sig) => {
    const h = () => {
      if (sig === 'SIGINT' && ++interrupts > 1) process.exit(130);
      forward(sig);
    };
    process.on(sig, h);
    return () => process.off(sig, h);
  });
  return () => handlers.forEach((off) => off());
}
