import { packageConfig } from '../../tsup.shared.ts';

// cli.js is the bin (ESM, run by node directly); only the library entry needs types and a Node wrapper.
export default packageConfig({
  entry: { index: 'src/index.ts', cli: 'src/cli.ts' },
  platform: 'node',
  dts: { entry: { index: 'src/index.ts' } },
  nodeEntries: ['index'],
});
