import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ForkdClient, ExecOptions } from '@forkd/sdk';
import { execApi, execArgs } from './tool-args.js';
import { guarded, ok } from './tool-result.js';
import { BoundedText, cutNote } from './output-cut.js';
import { toolNotifier, type ApprovalWaitHook } from './notifier.js';

const DESCRIPTION = `Runs a shell command in a sandbox (bash -lc, as root) to completion and returns its stdout, stderr and exit code. Each stream is cut at 64 KiB with a note; write large output to a file and read parts of it.
Before a risky step (deleting or rewriting files, migrations, installs, "rm -rf", anything hard to undo) call snapshot_create first: if the step goes wrong, sandbox_rewind to that snapshot puts memory and files back exactly as they were.
A command refused by the sandbox's policy answers an error naming the rule; one that needs approval waits for it (you are told that it waits).`;

/** sandbox_exec. */
export function registerExecTool(server: McpServer, forkd: ForkdClient): void {
  server.registerTool(
    'sandbox_exec',
    {
      title: 'Run a command',
      description: DESCRIPTION,
      inputSchema: execArgs,
      outputSchema: { stdout: z.string(), stderr: z.string(), exit_code: z.number(), signal: z.number().optional(), stdout_cut_bytes: z.number().optional(), stderr_cut_bytes: z.number().optional() },
      annotations: { destructiveHint: true, openWorldHint: true },
    },
    (args, extra) =>
      guarded(async () => {
        const sbx = await forkd.sandboxes.get(args.sandbox_id);
        const out = new BoundedText();
        const err = new BoundedText();
        const notifier = toolNotifier(extra);
        const opts: ExecOptions & ApprovalWaitHook = {
          ...execApi.toApi(args),
          capture: false,
          onStdout: (c) => out.push(c),
          onStderr: (c) => err.push(c),
          // Honoured once the SDK reports an approval-gated exec's wait (see notifier.ts).
          onWaiting: (info) => void notifier.waiting(info),
          abortSignal: extra.signal,
        };
        const r = await sbx.exec(args.command, opts);
        const o = out.result();
        const e = err.result();
        const structured = {
          stdout: o.text + (o.cutBytes ? cutNote('stdout', o.cutBytes) : ''),
          stderr: e.text + (e.cutBytes ? cutNote('stderr', e.cutBytes) : ''),
          exit_code: r.exitCode,
          ...(r.signal ? { signal: r.signal } : {}),
          ...(o.cutBytes ? { stdout_cut_bytes: o.cutBytes } : {}),
          ...(e.cutBytes ? { stderr_cut_bytes: e.cutBytes } : {}),
        };
        const status = r.signal ? `killed by signal ${r.signal}${r.oomKilled ? ' (out of memory)' : ''}` : `exit code ${r.exitCode}`;
        return ok(structured, `${status}\n--- stdout ---\n${structured.stdout}\n--- stderr ---\n${structured.stderr}`);
      }),
  );
}
