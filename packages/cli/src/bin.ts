#!/usr/bin/env node
import { configureRemote, setStaleFileReporter } from '@tensorport/lib/node';
import { main } from './program.ts';
import { escapeTerminal } from './report.ts';

// Leftovers of killed runs removed before writing (core's stale.ts) are reported like any warning.
setStaleFileReporter((message) => process.stderr.write(`tensorport: warning: ${escapeTerminal(message)}\n`));

// URL and hf:// inputs: what each cost, on stderr (stdout stays the report, --json included).
configureRemote({
  onTransfer: (input, t) =>
    t.requests > 0 &&
    process.stderr.write(`tensorport: ${escapeTerminal(input)}: fetched ${t.bytesTransferred} of ${t.size} bytes in ${t.requests} request${t.requests === 1 ? '' : 's'}\n`),
});

// `tensorport inspect big.safetensors | head`: the reader went away; stop quietly, not with a stack trace.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
  process.exit(Number(process.exitCode ?? 0));
});

// exitCode, not process.exit(): stdout may still be flushing a large --json report into a pipe.
void main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, handleSignals: true }).then((code) => {
  process.exitCode = code;
});
