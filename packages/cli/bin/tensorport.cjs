#!/usr/bin/env node
// `npx tensorport`: this package is the command line (and re-exports the library, @tensorport/lib).
// A CommonJS file that require()s the CJS build of the command: an ES module bin import()ing the
// ESM build starts Node's ESM loader and runs every CJS bundle through it: ~250 ms more per command
// (docs/packaging.md, "What the bin loads").
'use strict';
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // Scripts ask for the version to decide what to run; loading the command line to answer it
  // costs ~40 ms over node's own start-up (docs/packaging.md). The program's VERSION is this same
  // field (a test holds them equal).
  process.stdout.write(`${require('../package.json').version}\n`);
} else {
  // libuv's thread pool starts on first use and reads its size then: a convert keeps two reads ahead,
  // two writes queued and a background fdatasync on it at once, one more than the default 4 threads.
  process.env.UV_THREADPOOL_SIZE ??= '8';
  // Node 22.1+ keeps compiled code between runs (a no-op where it does not exist, as on Node 20).
  require('node:module').enableCompileCache?.();
  require('../dist/bin.cjs');
}
