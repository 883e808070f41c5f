#!/usr/bin/env node
// An .npz past 4 GiB written by `tensorport convert` must be read by np.load: ZIP64 sizes and
// offsets where numpy's zipfile needs them. The input is a sparse safetensors file (6 U8 tensors
// of 900 MiB, each with its index written at its first and last byte) so only the output costs disk.
// Usage: node bench/npz-zip64.mjs [--dir DIR] [--keep]
import { closeSync, ftruncateSync, mkdirSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, ROOT, findPython, measure, requireBuild } from './lib.mjs';

const { values } = parseArgs({ options: { dir: { type: 'string', default: join(ROOT, 'bench/out') }, keep: { type: 'boolean', default: false } } });
requireBuild();
const py = findPython(['numpy']);
if (!py) {
  console.error('bench: needs a python3 with numpy');
  process.exit(2);
}
mkdirSync(values.dir, { recursive: true });
const input = join(values.dir, 'zip64-in.safetensors');
const output = join(values.dir, 'zip64-out.npz');
const COUNT = 6;
const BYTES = 900 * 1024 * 1024;

// safetensors by hand: 8-byte LE header length, JSON padded to 8, data.
const entries = [];
for (let i = 0; i < COUNT; i++) entries.push(`"t${i}":{"dtype":"U8","shape":[${BYTES}],"data_offsets":[${i * BYTES},${(i + 1) * BYTES}]}`);
let json = `{${entries.join(',')}}`;
json += ' '.repeat((8 - (json.length % 8)) % 8);
const head = Buffer.alloc(8);
head.writeBigUInt64LE(BigInt(json.length));
const fd = openSync(input, 'w');
writeSync(fd, head, 0, 8, 0);
writeSync(fd, json, 8);
const data = 8 + json.length;
ftruncateSync(fd, data + COUNT * BYTES);
for (let i = 0; i < COUNT; i++) {
  writeSync(fd, Buffer.from([i + 1]), 0, 1, data + i * BYTES);
  writeSync(fd, Buffer.from([i + 1]), 0, 1, data + (i + 1) * BYTES - 1);
}
closeSync(fd);

rmSync(output, { force: true });
const conv = measure(process.execPath, [CLI, 'convert', input, output]);
const size = statSync(output).size;
console.log(`bench: wrote ${output}: ${(size / 1024 ** 3).toFixed(2)} GiB in ${conv.secs.toFixed(1)} s, peak RSS ${conv.rssMiB.toFixed(0)} MiB`);
const check = measure(py, ['-c', `
import sys, json, zipfile, numpy as np
path, count = sys.argv[1], int(sys.argv[2])
z = np.load(path)
ok = sorted(z.files) == [f"t{i}" for i in range(count)]
for i in range(count):
    a = z[f"t{i}"]
    ok = ok and a.dtype == np.uint8 and a.shape == (${BYTES},) and a[0] == i + 1 and a[-1] == i + 1 and int(np.count_nonzero(a)) == 2
    del a
offsets = [info.header_offset for info in zipfile.ZipFile(path).infolist()]
print(json.dumps({"ok": bool(ok), "numpy": np.__version__, "last_member_offset": max(offsets)}))
`, output, String(COUNT)]);
const r = JSON.parse(check.stdout);
console.log(`np.load (numpy ${r.numpy}): ${r.ok ? 'every array read back correctly' : 'MISMATCH'}; last member at byte ${r.last_member_offset} (${r.last_member_offset > 2 ** 32 ? 'past' : 'NOT past'} 4 GiB)`);
if (!values.keep) {
  rmSync(input, { force: true });
  rmSync(output, { force: true });
}
if (!r.ok || r.last_member_offset <= 2 ** 32) process.exit(1);
