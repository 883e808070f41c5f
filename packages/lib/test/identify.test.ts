import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BytesSource, MemorySink, TensorportError, ZipWriter } from '@tensorport/core';
import { validFile } from '../../core/test/helpers/safetensors-bytes.ts';
import { identify } from '../src/identify.ts';

const enc = new TextEncoder();

async function* one(b: Uint8Array): AsyncGenerator<Uint8Array> {
  yield b;
}

async function zipOf(members: Record<string, string | Uint8Array>): Promise<Uint8Array> {
  const sink = new MemorySink();
  const zip = new ZipWriter(sink);
  for (const [name, data] of Object.entries(members)) await zip.add(name, one(typeof data === 'string' ? enc.encode(data) : data));
  await zip.finish();
  await sink.commit();
  return sink.bytes();
}

const id = (bytes: Uint8Array, name = 'file') => identify(new BytesSource(bytes, name));

/** A MATLAB Live Script as MATLAB saves it: an OPC package (the layout of a .docx). */
async function matlabLiveScript(): Promise<Uint8Array> {
  return zipOf({
    '[Content_Types].xml': '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/vnd.mathworks.matlab.code.document+xml"/></Types>',
    '_rels/.rels': '<?xml version="1.0"?><Relationships/>',
    'matlab/document.xml': '<w:document><w:body><w:p><w:r><w:t>x = 1;</w:t></w:r></w:p></w:body></w:document>',
    'metadata/coreProperties.xml': '<cp:coreProperties/>',
  });
}

function npyHeader(descr: string, shape: string): Uint8Array {
  let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  while ((10 + h.length + 1) % 64 !== 0) h += ' ';
  h += '\n';
  const out = new Uint8Array(10 + h.length + 16);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 0xff, h.length >> 8]);
  out.set(enc.encode(h), 10);
  return out;
}

describe('identify: formats from their bytes', () => {
  it('a .mlx MATLAB Live Script is named as such, not MLX weights', async () => {
    const r = await id(await matlabLiveScript(), 'analysis.mlx');
    expect(r.kind).toBe('matlab-live-script');
    expect(r.what).toMatch(/MATLAB Live Script.*not MLX weights.*\.safetensors or \.npz/);
    expect(r.can).toMatch(/^not supported/);
    expect(r.warnings).toEqual([]);
  });

  it('MLX weights saved as .mlx get a warning naming both the extension and the content', async () => {
    const bytes = validFile([['l.weight', 'U32', [2, 1], 8], ['l.scales', 'F16', [2, 1], 4]]);
    const r = await id(bytes, 'model.mlx');
    expect(r.kind).toBe('mlx-quantized');
    expect(r.container).toBe('safetensors');
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]!.code).toBe('ExtensionMismatch');
    expect(r.warnings[0]!.message).toContain("'.mlx' (usually a MATLAB Live Script)");
    expect(r.warnings[0]!.message).toContain('MLX quantized');
  });

  it('safetensors behind .bin is safetensors, with a warning', async () => {
    const r = await id(validFile([['w', 'F32', [2], 8]]), 'pytorch_model.bin');
    expect(r.kind).toBe('safetensors');
    expect(r.can).toBe('convert, inspect, validate');
    expect(r.warnings[0]!.message).toMatch(/'\.bin'.*PyTorch.*bytes are safetensors/);
  });

  it('an F32 .scales beside an F32 .weight is not MLX quantized; metadata format mlx is', async () => {
    expect((await id(validFile([['l.weight', 'F32', [2], 8], ['l.scales', 'F32', [2], 8]]))).kind).toBe('safetensors');
    expect((await id(validFile([['w', 'F32', [2], 8]], { format: 'mlx' }))).kind).toBe('mlx-quantized');
  });

  it('ZIP kinds from member names: torch, TorchScript, npz, MLX npz, plain', async () => {
    expect((await id(await zipOf({ 'archive/data.pkl': '\x80\x02}q\x00.', 'archive/data/0': 'abcd', 'archive/version': '3\n' }))).kind).toBe('torch-zip');
    expect((await id(await zipOf({ 'm/data.pkl': 'x', 'm/constants.pkl': 'x', 'm/code/__torch__.py': '' }))).kind).toBe('torchscript');
    expect((await id(await zipOf({ 'm/data.pkl': 'x', 'm/code/__torch__.py': '' }))).kind).toBe('torchscript');
    expect((await id(await zipOf({ 'a.npy': npyHeader('<f4', '(4,)') }))).kind).toBe('npz');
    const mlx = await id(await zipOf({ 'l.weight.npy': npyHeader('<u4', '(4,)'), 'l.scales.npy': npyHeader('<f2', '(4,)') }));
    expect(mlx).toMatchObject({ kind: 'mlx-quantized', container: 'npz' });
    expect((await id(await zipOf({ 'l.weight.npy': npyHeader('<f4', '(4,)'), 'l.scales.npy': npyHeader('<f4', '(4,)') }))).kind).toBe('npz');
    expect((await id(await zipOf({ 'readme.txt': 'hi' }))).kind).toBe('zip');
    // An OPC package without matlab/ parts (a .docx) is a plain ZIP.
    expect((await id(await zipOf({ '[Content_Types].xml': '<Types/>', 'word/document.xml': '' }))).kind).toBe('zip');
  });

  it('GGUF header fields: version, tensor and KV counts (u64 LE)', async () => {
    const b = new Uint8Array(32);
    b.set(enc.encode('GGUF'));
    const v = new DataView(b.buffer);
    v.setUint32(4, 3, true);
    v.setBigUint64(8, 291n, true);
    v.setBigUint64(16, 2n ** 40n, true);
    const r = await id(b, 'x.gguf');
    expect(r).toMatchObject({ kind: 'gguf', details: { version: 3, tensorCount: '291', kvCount: String(2n ** 40n) }, warnings: [] });
    // Truncated: still GGUF by its magic, no counts invented.
    expect((await id(b.subarray(0, 10))).details).toEqual({});
  });

  it('HDF5 at 0 and after a user block (512, 1024, 2048…), not at other offsets', async () => {
    const magic = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];
    for (const at of [0, 512, 1024, 4096]) {
      const b = new Uint8Array(8192);
      b.set(magic, at);
      const r = await id(b, 'model.h5');
      expect(r.kind, `offset ${at}`).toBe('hdf5');
      if (at > 0) expect(r.details.superblockOffset).toBe(at);
    }
    const b = new Uint8Array(8192);
    b.set(magic, 700);
    expect((await id(b)).kind).toBe('unknown');
  });

  it('pickles: legacy torch magic vs a bare pickle', async () => {
    const legacy = new Uint8Array([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e]);
    expect((await id(legacy, 'old.pt')).kind).toBe('torch-legacy');
    expect((await id(new Uint8Array([0x80, 0x04, 0x95, 0, 0, 0, 0, 0, 0, 0, 0, 0x7d, 0x2e]), 'x.pkl')).kind).toBe('pickle');
  });

  it('JSON: a shard index (weight_map) vs other JSON', async () => {
    expect((await id(enc.encode('{"metadata":{"total_size":8},"weight_map":{"w":"a.safetensors"}}'), 'model.safetensors.index.json')).kind).toBe('safetensors-index');
    expect((await id(enc.encode('{"hidden_size":8}'), 'config.json')).kind).toBe('json');
    const torchIndex = '{"metadata":{"total_size":8},"weight_map":{"w":"pytorch_model-00001-of-00002.bin"}}';
    expect((await id(enc.encode(torchIndex), 'pytorch_model.bin.index.json')).kind).toBe('torch-index');
  });

  it('ONNX heuristic: ir_version then ModelProto fields; near misses are unknown', async () => {
    const producer = enc.encode('pytorch');
    const onnx = new Uint8Array([0x08, 0x08, 0x12, producer.length, ...producer, 0x3a, 0x04, 0x0a, 0x00, 0x12, 0x00]);
    expect(await id(onnx, 'm.onnx')).toMatchObject({ kind: 'onnx', details: { irVersion: 8, producer: 'pytorch' } });
    // A graph field longer than the file, an unknown field number, ir_version only.
    expect((await id(new Uint8Array([0x08, 0x08, 0x3a, 0x7f, 0x00]))).kind).toBe('unknown');
    expect((await id(new Uint8Array([0x08, 0x08, 0x4a, 0x00]))).kind).toBe('unknown');
    expect((await id(new Uint8Array([0x08, 0x08]))).kind).toBe('unknown');
  });

  it('empty and unknown files; a damaged ZIP is a ZIP with a warning', async () => {
    expect((await id(new Uint8Array(0))).kind).toBe('empty');
    expect((await id(enc.encode('hello world'))).kind).toBe('unknown');
    const zip = await zipOf({ 'a.txt': 'x' });
    const r = await id(zip.subarray(0, zip.length - 4));
    expect(r.kind).toBe('zip');
    expect(r.warnings[0]!.code).toMatch(/^Zip/);
  });

  it('a ZIP whose end record declares a 100 MB central directory is refused without reading it', async () => {
    const eocd = new Uint8Array(22);
    const v = new DataView(eocd.buffer);
    v.setUint32(0, 0x06054b50, true);
    v.setUint16(8, 1, true);
    v.setUint16(10, 1, true);
    v.setUint32(12, 100_000_000, true);
    v.setUint32(16, 0, true);
    const r = await id(eocd);
    expect(r.kind).toBe('zip');
    expect(r.warnings[0]!.code).toMatch(/^Zip/);
    expect(r.bytesRead).toBeLessThan(70 * 1024);
  });

  it('a safetensors header length pointing past the file is not safetensors; an unparsable header is, with a warning', async () => {
    const lie = new Uint8Array(64);
    new DataView(lie.buffer).setBigUint64(0, 1000n, true);
    lie[8] = 0x7b;
    expect((await id(lie)).kind).not.toBe('safetensors');
    const bad = new Uint8Array(24);
    new DataView(bad.buffer).setBigUint64(0, 16n, true);
    bad.set(enc.encode('{"w":{"dtype":1}'), 8);
    const r = await id(bad, 'x.safetensors');
    expect(r.kind).toBe('safetensors');
    expect(r.warnings[0]!.message).toMatch(/header is invalid/);
  });

  it('reads a few KB of a large safetensors file, not its data', async () => {
    const big = validFile([['w', 'F32', [1 << 18], 1 << 20]]);
    const r = await id(big);
    expect(r.kind).toBe('safetensors');
    expect(r.bytesRead).toBeLessThan(8192);
  });

  it('never throws anything but a TensorportError, and never reads past the file (property)', async () => {
    const prefixes = [[], [0x50, 0x4b, 0x03, 0x04], [0x50, 0x4b, 0x05, 0x06], [0x08], [0x80, 0x02], [0x47, 0x47, 0x55, 0x46], [0x7b]];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...prefixes), fc.uint8Array({ maxLength: 600 }), async (prefix, rest) => {
        const b = new Uint8Array([...prefix, ...rest]);
        try {
          const r = await id(b);
          expect(r.bytesRead).toBeGreaterThanOrEqual(0);
        } catch (e) {
          expect(e).toBeInstanceOf(TensorportError);
        }
      }),
      { numRuns: 400 },
    );
  });
});
