#!/usr/bin/env node
import { main } from './program.ts';

// exitCode, not process.exit(): stdout may still be flushing a large --json report into a pipe.
void main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr }).then((code) => {
  process.exitCode = code;
});
