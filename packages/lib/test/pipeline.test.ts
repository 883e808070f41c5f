import { readFile, readdir } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  MemoryFolder, MemoryTarget, checkWritten, convert, createRegistry, defaultRegistry, inspect, memoryContext, openInput, safetensorsFormat, torchFormat, validate,
  type Format, type TensorDescriptor,
} from '../src/index.ts';
import { convertPath, inspectPath, pathContext } from '../src/node/index.ts';

const REPO = join(import.meta.dirname, '../../..');
const TORCH = join(REPO, 'fixtures/torch/checkpoints/transformers.pt');
const dirs: string[] = [];
const tempDir = async () => {
  const d = await mkdtemp(join(tmpdir(), 'tensorport-lib-'));
  dirs.push(d);
  return d;
};
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('the pipeline over in-memory files (what a browser has)', () => {
  it('converts a torch.save file to the same safetensors bytes as the path form', async () => {
    const bytes = new Uint8Array(await readFile(TORCH));
    const input = memoryContext(new MemoryFolder([['transformers.pt', bytes]]), 'transformers.pt');
    const target = new MemoryTarget('model.safetensors');
    const r = await convert({ input, target });
    await input.close();
    expect(r.from).toBe('torch-zip');
    expect(r.files).toEqual(['model.safetensors']);
    const dir = await tempDir();
    const onDisk = await convertPath({ input: TORCH, output: join(dir, 'model.safetensors') });
    expect(onDisk.bytes).toBe(r.bytes);
    expect(Buffer.from(target.written.get('model.safetensors')!).equals(await readFile(join(dir, 'model.safetensors')))).toBe(true);
  });

  it('lets the input context forget its parsed ZIP directory before the read-back, unless --verify reads the input again', async () => {
    const bytes = new Uint8Array(await readFile(TORCH));
    for (const verify of [false, true]) {
      const input = memoryContext(new MemoryFolder([['transformers.pt', bytes]]), 'transformers.pt');
      const parsed = await input.zip();
      let forgotten = 0;
      const forget = input.forget!.bind(input);
      input.forget = () => {
        forgotten++;
        forget();
      };
      await convert({ input, target: new MemoryTarget('model.safetensors'), verify });
      expect(forgotten).toBe(verify ? 0 : 1);
      // Forgotten: a later ask parses the directory again; kept: the same archive.
      expect((await input.zip()) === parsed).toBe(verify);
      await input.close();
    }
  });

  it('checkWritten refuses an output whose read-back differs from what was written, tensor by tensor', async () => {
    const bytes = new Uint8Array(await readFile(TORCH));
    const input = memoryContext(new MemoryFolder([['x.pt', bytes]]), 'x.pt');
    const target = new MemoryTarget('model.safetensors');
    await convert({ input, target });
    const { checkpoint } = await openInput(input);
    const written = checkpoint.tensors;
    await checkWritten(safetensorsFormat, target, ['model.safetensors'], written, true);
    const first = written[0]!;
    const plain = (t: TensorDescriptor): TensorDescriptor => ({ name: t.name, dtype: t.dtype, shape: t.shape, byteLength: t.byteLength, chunks: (n) => t.chunks(n) });
    // the first tensor moved last, with `change` made to it
    const claims = (change: Partial<TensorDescriptor>): TensorDescriptor[] => [...written.slice(1).map(plain), { ...plain(first), ...change }];
    const codeOf = (p: Promise<unknown>) => p.then(() => 'passed', (e: { code?: string }) => e.code);
    // the same tensors in another order pass; one field changed, a name missing or added does not
    expect(await codeOf(checkWritten(safetensorsFormat, target, ['model.safetensors'], claims({}), false))).toBe('passed');
    const other = first.dtype === 'F32' ? 'I32' : 'F32';
    for (const t of [{ dtype: other }, { shape: [...first.shape, 1] }, { byteLength: first.byteLength + 1 }, { name: 'not.written' }] as Array<Partial<TensorDescriptor>>) {
      expect(await codeOf(checkWritten(safetensorsFormat, target, ['model.safetensors'], claims(t), false)), JSON.stringify(t)).toBe('ShardMismatch');
    }
    expect(await codeOf(checkWritten(safetensorsFormat, target, ['model.safetensors'], written.slice(1), false))).toBe('ShardMismatch');
    await checkpoint.close();
    await input.close();
  });

  it('inspects the same tensors from memory and from a path', async () => {
    const bytes = new Uint8Array(await readFile(TORCH));
    const ctx = memoryContext(new MemoryFolder([['x.pt', bytes]]), 'x.pt');
    const fromMemory = await inspect(ctx);
    await ctx.close();
    const fromPath = await inspectPath(TORCH);
    expect(fromMemory.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual(fromPath.tensors.map((t) => [t.name, t.dtype, t.shape]));
    expect(fromMemory.totals).toEqual(fromPath.totals);
  });
});

describe('inspect names where the bytes are', () => {
  it('a torch.save file is one file: each tensor at its absolute offsets in it, bytes as the reader yields them', async () => {
    const file = new Uint8Array(await readFile(TORCH));
    const r = await inspectPath(TORCH);
    expect(r.files).toEqual([{ path: TORCH, bytes: file.byteLength }]);
    const ctx = await pathContext(TORCH);
    try {
      const { checkpoint } = await openInput(ctx);
      const byName = new Map(checkpoint.tensors.map((t) => [t.name, t]));
      for (const t of r.tensors) {
        expect(t.file).toBe(TORCH);
        const [begin, end] = t.offsets!;
        const parts: Uint8Array[] = [];
        for await (const c of byName.get(t.name)!.chunks()) parts.push(c.slice());
        expect(Buffer.from(file.subarray(begin, end)).equals(Buffer.concat(parts))).toBe(true);
      }
      await checkpoint.close();
    } finally {
      await ctx.close();
    }
  });
});

describe('registries', () => {
  it('the default one holds every format, in sniffing order', () => {
    expect(defaultRegistry.formats.map((f) => f.name)).toEqual(['safetensors', 'torch', 'npz', 'npy', 'gguf']);
  });

  it('a registry without torch cannot read a torch file; one with a planted format uses it', async () => {
    const ctx = await pathContext(TORCH);
    try {
      const only = createRegistry([safetensorsFormat]);
      await expect(inspect(ctx, { registry: only })).rejects.toMatchObject({ code: 'UnsupportedFormat' });
      const v = await validate(ctx, { registry: createRegistry([safetensorsFormat, torchFormat]) });
      expect(v).toMatchObject({ format: 'torch', valid: true });
    } finally {
      await ctx.close();
    }
  });

  it('a written output that fails its validator is rolled back', async () => {
    const broken: Format = {
      ...(safetensorsFormat as Format),
      name: 'broken',
      validate: async (ctx) => ({ valid: false, errors: [{ code: 'InvalidOffset', message: 'planted', path: ctx.name }], warnings: [], files: [ctx.name] }),
    };
    const dir = await tempDir();
    const registry = createRegistry([...defaultRegistry.formats, broken]);
    await expect(convertPath({ input: TORCH, output: join(dir, 'out') + '/', to: 'broken', registry })).rejects.toMatchObject({ code: 'InvalidOffset' });
    expect(await readdir(dir)).toEqual([]);
  });
});
