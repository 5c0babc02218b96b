import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { cliVersion } from '../version.js';

const USAGE = `Usage: forkd mcp

Runs forkd's MCP (Model Context Protocol) server on stdin/stdout, for an MCP
client (an agent, an IDE) to start: its tools create sandboxes, run commands,
read and write files, snapshot, rewind and fork, through the forkd server at
$FORKD_URL (default http://127.0.0.1:8080) with the key $FORKD_API_KEY. It
stops when the client closes stdin. Client configuration:

  { "mcpServers": { "forkd": { "command": "forkd", "args": ["mcp"],
      "env": { "FORKD_URL": "http://127.0.0.1:8080", "FORKD_API_KEY": "fk_..." } } } }

\`forkd serve\` also serves MCP over streamable HTTP at /mcp (same keys).
`;

export const mcpCommand: CliCommand = {
  name: 'mcp',
  usage: USAGE,
  async run(argv) {
    const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
    expectPositionals(positionals, []);
    // Loaded here, not at the top: the CLI's bundle is CommonJS and the MCP server an ES module.
    const { serveStdio } = await import('@forkd/mcp');
    // stdout is the protocol's: nothing else may be written there.
    await serveStdio(connect(), cliVersion());
    return 0;
  },
};
