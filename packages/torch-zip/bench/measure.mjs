// Figures for docs/formats/torch.md. Usage: npm run build; python3 bench/make.py /tmp/tzb; node bench/measure.mjs /tmp/tzb
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { FileSource, FileSink, nodeZlibCodec } from '@tensorport/core/node';
import { openTorchCheckpoint, writeTorchCheckpoint, runPickle, scanCheckpoint } from '../dist/index.js';

const dir = process.argv[2];
const ms = (t0) => `${(performance.now() - t0).toFixed(0)} ms`;

async function time(label, f) {
  const t0 = performance.now();
  const r = await f();
  console.log(`${label}: ${ms(t0)}`);
  return r;
}

for (const file of ['many.pt', 'big.pt']) {
  const path = `${dir}/${file}`;
  const c = await time(`${file}: openTorchCheckpoint`, async () => openTorchCheckpoint(await FileSource.open(path)));
  console.log(`  ${c.tensors.length} tensors, ${c.tensors.reduce((a, t) => a + t.byteLength, 0)} bytes`);
  await time(`${file}: scanCheckpoint`, async () => {
    const s = await FileSource.open(path);
    const r = await scanCheckpoint(s);
    await s.close();
    return r;
  });
  await time(`${file}: stream every tensor through sha256`, async () => {
    const h = createHash('sha256');
    for (const t of c.tensors) for await (const ch of t.chunks()) h.update(ch);
  });
  await time(`${file}: writeTorchCheckpoint to a file (portable CRC-32)`, async () => writeTorchCheckpoint(c, await FileSink.create(`${dir}/out_${file}`, { force: true })));
  await time(`${file}: writeTorchCheckpoint to a file (zlib CRC-32)`, async () => writeTorchCheckpoint(c, await FileSink.create(`${dir}/out_${file}`, { force: true }), { zipCodec: nodeZlibCodec }));
  await c.close();
  const py = `import torch,time,sys; t=time.time(); torch.load(sys.argv[1], weights_only=True); print(f"{(time.time()-t)*1000:.0f} ms")`;
  console.log(`  torch.load(weights_only=True) ${file}: ${execFileSync('python3', ['-c', py, path]).toString().trim()}`);
  console.log(`  torch.load(weights_only=True) our out_${file}: ${execFileSync('python3', ['-c', py, `${dir}/out_${file}`]).toString().trim()}`);
}

// hostile inputs: each ends fast with a typed error or a bounded result
const bomb = [0x80, 2, 0x7d, 0x28, 0x58, 2, 0, 0, 0, 0x6c, 0x30, 0x58, 3, 0, 0, 0, 0x6c, 0x6f, 0x6c, 0x71, 0];
for (let i = 1; i < 30; i++) bomb.push(0x58, 2, 0, 0, 0, 0x6c, 0x30 + (i % 10), 0x5d, 0x28, ...Array(10).fill([0x68, i - 1]).flat(), 0x65, 0x71, i);
bomb.push(0x75, 0x2e);
await time(`billion laughs 10^30 leaves (${bomb.length} B): load`, async () => runPickle(Uint8Array.from(bomb), 0, { mode: 'load' }));
const long4 = new Uint8Array(2 + 5 + (2 << 20) + 1);
long4.set([0x80, 2, 0x8b, 0, 0, 0x20, 0], 0);
long4[long4.length - 1] = 0x2e;
await time('2 MiB LONG4 decoded (limit raised to 4 MiB)', async () => runPickle(long4, 0, { mode: 'load', limits: { maxIntBytes: 4 << 20 } }));
const deep = new Uint8Array(2 + 200_000 + 1).fill(0x5d);
deep.set([0x80, 2]);
await time('100k-deep EMPTY_LIST stack: refused', async () => { try { runPickle(deep, 0, { mode: 'load' }); } catch (e) { return e.code; } });
