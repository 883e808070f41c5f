#!/usr/bin/env node
// `npx tensorport`: the command line lives in @tensorport/cli (a peer this package installs with it);
// this package holds the library it runs on. See docs/architecture.md ("Packages and layers").
// A CommonJS file that require()s the CJS build of the CLI: an ES module bin that import()s it starts
// Node's ESM loader and runs every CJS bundle through it, 0.33 s against 0.23 s for `--version`
// (docs/packaging.md, "What the bin loads").
'use strict';
require('@tensorport/cli/cli');
