import { packageConfig } from '../../tsup.shared.ts';

// bin.js is what bin/tensorport.cjs runs (it has side effects and no types). index and node only
// re-export @tensorport/lib, whose own Node wrapper keeps one copy of it under import and require,
// so they need none of their own.
export default packageConfig({
  entry: { index: 'src/index.ts', node: 'src/node.ts', cli: 'src/cli.ts', bin: 'src/bin.ts' },
  platform: 'node',
  dts: { entry: { index: 'src/index.ts', node: 'src/node.ts', cli: 'src/cli.ts' } },
  nodeEntries: [],
});
