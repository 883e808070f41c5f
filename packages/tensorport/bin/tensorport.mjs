#!/usr/bin/env node
// `npx tensorport`: the command line lives in @tensorport/cli (a peer this package installs with it);
// this package holds the library it runs on. See docs/architecture.md ("Packages and layers").
await import('@tensorport/cli/cli');
