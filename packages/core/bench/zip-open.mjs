// Figures for docs/formats/zip.md (opening cost). Usage: cd packages/core && npx tsup && node bench/zip-open.mjs DIR [file.pt ...]
// Writes DIR/stored-100k.zip (patched local headers) and DIR/desc-100k.zip (data descriptors, as
// torch writes), 100,000 stored 16-byte members each, then times openZip on them from a file and
// from memory, plus any extra archives named on the command line (a torch.save of 100k tensors).
import { existsSync, readFileSync } from 'node:fs';
import { BytesSource, ZipWriter, openZip } from '../dist/index.js';
import { FileSink, FileSource, nodeZlibCodec } from '../dist/node.js';

const dir = process.argv[2] ?? '/tmp/zipbench';
const N = 100_000;

async function* one(b) {
  yield b;
}

async function make(path, dataDescriptors) {
  if (existsSync(path)) return;
  const sink = await FileSink.create(path, { force: true });
  const zip = new ZipWriter(sink, { codec: nodeZlibCodec, dataDescriptors });
  const data = new Uint8Array(16);
  for (let i = 0; i < N; i++) {
    data.fill(i & 0xff);
    await zip.add(`archive/data/${i}`, one(data));
  }
  await zip.finish();
  await sink.commit();
}

async function time(label, f, runs = 3) {
  const ms = [];
  let r;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    r = await f();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  console.log(`${label}: median ${ms[Math.floor(ms.length / 2)].toFixed(0)} ms (${ms.map((x) => x.toFixed(0)).join(', ')})`);
  return r;
}

const files = [`${dir}/stored-100k.zip`, `${dir}/desc-100k.zip`, ...process.argv.slice(3)];
await make(files[0], false);
await make(files[1], true);
for (const path of files) {
  await time(`${path}: openZip from a file`, async () => {
    const s = await FileSource.open(path);
    const z = await openZip(s);
    const reads = s.bytesRead;
    await s.close();
    return [z.entries.length, reads];
  }).then(([n, reads]) => console.log(`  ${n} members, ${reads} bytes read to open`));
  const bytes = new Uint8Array(readFileSync(path));
  await time(`${path}: openZip from memory`, async () => openZip(new BytesSource(bytes)));
}
