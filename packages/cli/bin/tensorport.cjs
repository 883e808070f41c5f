#!/usr/bin/env node
// `npx tensorport`: this package is the command line (and re-exports the library, @tensorport/lib).
// A CommonJS file that require()s the CJS build of the command: an ES module bin import()ing the
// ESM build starts Node's ESM loader and runs every CJS bundle through it: ~250 ms more per command
// (docs/packaging.md, "What the bin loads").
'use strict';
// libuv's thread pool starts on first use and reads its size then: a convert keeps two reads ahead,
// two writes queued and a background fdatasync on it at once, one more than the default 4 threads.
process.env.UV_THREADPOOL_SIZE ??= '8';
// Node 22.1+ keeps compiled code between runs (a no-op where it does not exist, as on Node 20).
require('node:module').enableCompileCache?.();
require('../dist/bin.cjs');
