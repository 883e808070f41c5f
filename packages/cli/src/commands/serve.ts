import { Option, type Command } from 'commander';
import { parsePort } from '../options.ts';
import { startServer, untilInterrupted } from '../serve.ts';
import type { CommandContext } from './context.ts';

export function registerServe(program: Command, ctx: CommandContext): void {
  program
    .command('serve')
    .description('Serve the in-browser inspector on this machine: files are read in the browser and never uploaded')
    .addOption(new Option('--port <port>', 'TCP port (0 picks a free one)').argParser(parsePort).default(0))
    .option('--host <host>', 'interface to listen on; anything but loopback exposes the page to the network', '127.0.0.1')
    .option('--allow-host <name>', 'also accept requests whose Host header is <name> (repeatable; e.g. this machine\'s DNS name with --host 0.0.0.0)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .addHelpText(
      'after',
      `
Runs until Ctrl-C. The page (packages/web) reads checkpoint headers locally in a worker; the server
only serves the page's own files.

Examples:
  $ tensorport serve
  $ tensorport serve --port 8080`,
    )
    .action(async (opts: { port: number; host: string; allowHost: string[] }) => {
      const server = await startServer({ port: opts.port, host: opts.host, allowHosts: opts.allowHost });
      ctx.out(`tensorport: serving the inspector at ${server.url} (Ctrl-C stops)\n`);
      await untilInterrupted();
      await server.close();
    });
}
