import { packageConfig } from '../../tsup.shared.ts';

export default packageConfig({ entry: { index: 'src/index.ts' } });
