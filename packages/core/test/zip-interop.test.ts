import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BytesSource, MemorySink, ZipWriter, openZip } from '../src/index.ts';
import { nodeZlibCodec } from '../src/node/zlib.ts';
import { requirePython, runPython } from './helpers/python.ts';

const FIX = new URL('../../../fixtures/npz/', import.meta.url);
const py = await requirePython(['zipfile']);

const LIST = `
import sys, json, zipfile
out = {}
for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as z:
        out[path] = [[i.filename, i.file_size, i.compress_size, i.CRC, i.compress_type] for i in z.infolist()]
print(json.dumps(out))
`;

describe.skipIf(!py)('ZIP reader and writer against CPython zipfile', () => {
  it('lists every fixture archive as zipfile does (names, sizes, CRC, method)', async () => {
    const paths: string[] = [];
    for (const d of ['npz', 'reference']) {
      for (const f of readdirSync(new URL(d, FIX))) if (f.endsWith('.npz')) paths.push(new URL(`${d}/${f}`, FIX).pathname);
    }
    for (const f of ['ok_stored', 'cd_zip64_extra_sizes_only', 'zip64_minimal_valid', 'datadesc_payload_has_signatures']) {
      paths.push(new URL(`hostile/${f}.npz`, FIX).pathname);
    }
    paths.push(new URL('big/big_compressed_zeros.npz', FIX).pathname);
    const want = JSON.parse(await runPython(py!.exe, LIST, { args: paths })) as Record<string, unknown[]>;
    for (const p of paths) {
      const z = await openZip(new BytesSource(new Uint8Array(readFileSync(p))));
      expect(z.entries.map((e) => [e.name, e.uncompressedSize, e.compressedSize, e.crc32, e.method]), p).toEqual(want[p]);
    }
  });

  it('zipfile reads what ZipWriter writes (descriptors, deflate, non-ASCII names, FB padding) and testzip passes', async () => {
    const sink = new MemorySink();
    const zip = new ZipWriter(sink, { codec: nodeZlibCodec });
    const text = new TextEncoder().encode('hello '.repeat(1000));
    await zip.add('plain.txt', (async function* () { yield text; })());
    await zip.add('dir/ключ.bin', (async function* () { yield text.subarray(0, 10); yield text.subarray(10, 999); })(), { deflate: true });
    await zip.add('empty', (async function* () {})());
    await zip.add('aligned.bin', (async function* () { yield text.subarray(0, 77); })(), { align: 64 });
    await zip.finish();
    await sink.commit();
    const out = await runPython(
      py!.exe,
      `
import sys, io, zipfile, json
z = zipfile.ZipFile(io.BytesIO(sys.stdin.buffer.read()))
assert z.testzip() is None
print(json.dumps([[i.filename, len(z.read(i)), i.compress_type] for i in z.infolist()]))
`,
      { input: sink.bytes() },
    );
    expect(JSON.parse(out)).toEqual([['plain.txt', 6000, 0], ['dir/ключ.bin', 999, 8], ['empty', 0, 0], ['aligned.bin', 77, 0]]);
  });
});
