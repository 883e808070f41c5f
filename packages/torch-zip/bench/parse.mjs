// Interpreter throughput on one data.pkl: node bench/parse.mjs path/to/data.pkl (after npm run build)
import { readFileSync } from 'node:fs';
import { loadPickle, StorageTable } from '../dist/index.js';

const bytes = new Uint8Array(readFileSync(process.argv[2]));
for (let i = 0; i < 5; i++) {
  const t0 = performance.now();
  loadPickle(bytes, { persistentLoad: new StorageTable('zip').load });
  console.log(`${(bytes.byteLength / 1e6).toFixed(1)} MB pickle: ${(performance.now() - t0).toFixed(0)} ms`);
}
