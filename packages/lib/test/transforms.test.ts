import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mlxDequantize, mlxQuantize } from '../src/index.ts';
import { convertPath, inspectPath } from '../src/node/index.ts';

const REPO = join(import.meta.dirname, '../../..');
const INPUT = join(REPO, 'fixtures/safetensors/transformer_shard.safetensors');
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('MLX quantization as a convert transform', () => {
  it('writes MLX-quantized layers into any format the registry writes, verified, and back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tensorport-mlx-'));
    dirs.push(dir);
    for (const out of ['q.npz', 'q.pt', 'q.safetensors']) {
      const r = await convertPath({ input: INPUT, output: join(dir, out), transform: mlxQuantize({ bits: 8, groupSize: 32 }), verify: true, fsync: false });
      expect(r.verified, out).toBe(true);
      const report = await inspectPath(join(dir, out));
      const names = new Set(report.tensors.map((t) => t.name));
      const packed = report.tensors.filter((t) => t.dtype === 'U32' && names.has(t.name.replace(/\.weight$/, '.scales')));
      expect(packed.length, out).toBeGreaterThan(0);
    }
    // safetensors records the parameters in __metadata__: inspect reads them back per layer.
    const st = await inspectPath(join(dir, 'q.safetensors'));
    expect(st.quantization?.length).toBeGreaterThan(0);
    expect(st.quantization!.every((l) => l.bits === 8 && l.groupSize === 32)).toBe(true);
    // Dequantized back from the npz: every float weight again, in the scales' dtype.
    const back = await convertPath({ input: join(dir, 'q.safetensors'), output: join(dir, 'back.npz'), transform: mlxDequantize(), fsync: false });
    const original = await inspectPath(INPUT);
    const restored = await inspectPath(join(dir, 'back.npz'));
    expect(back.tensors).toBe(original.tensors.length);
    expect(restored.tensors.map((t) => [t.name, t.shape]).sort()).toEqual(original.tensors.map((t) => [t.name, t.shape]).sort());
  });
});
