/**
 * mlx-lm model directories read and written through the library (openPath + readConfig, and
 * writeMlxModelLayout over a FileTarget): moved from @tensorport/mlx, whose own Node helpers for
 * them are gone, so one writer applies the output policy to every model directory.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { dequantizeCheckpoint, findQuantizedLayers, repackCheckpoint } from '@tensorport/mlx';
import { collect } from '../../mlx/test/helpers/memory.ts';
import { openMlxModel, readModelConfig, writeMlxModelDir } from './helpers/mlx-model.ts';

const fixture = fileURLToPath(new URL('../../../fixtures/mlx/tiny-mixed/', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'tensorport-mlx-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('model directories on disk', () => {
  it('opens a directory through its index with config.json, repacks and writes a new one', async () => {
    const { checkpoint, config } = await openMlxModel(fixture);
    expect(config?.model_type).toBe('toy');
    const layers = findQuantizedLayers(checkpoint, { config });
    expect(layers).toHaveLength(9);
    const repacked = repackCheckpoint(checkpoint, { groupSize: 32, bits: 8 }, { config });
    const out = join(tmp, 'repacked');
    const { files } = await writeMlxModelDir(out, repacked);
    expect(readdirSync(out).sort()).toEqual([...files].sort());
    expect(repacked.report.every((r) => r.lossless && r.maxAbsError === 0)).toBe(true);
    // Same dequantized weights as the original, read back from disk.
    const again = await openMlxModel(out);
    const a = dequantizeCheckpoint(checkpoint, { config });
    const b = dequantizeCheckpoint(again.checkpoint, { config: again.config });
    for (const t of a.tensors) {
      const u = b.tensors.find((x) => x.name === t.name)!;
      expect(Buffer.from(await collect(u)).equals(Buffer.from(await collect(t))), t.name).toBe(true);
    }
    expect(findQuantizedLayers(again.checkpoint, { config: again.config }).filter((l) => l.mode === 'affine').every((l) => l.bits === 8 && l.groupSize === 32)).toBe(true);
    await checkpoint.close();
    await again.checkpoint.close();
  });

  it('refuses to overwrite, leaving the directory as it was', async () => {
    const { checkpoint, config } = await openMlxModel(fixture);
    const out = join(tmp, 'exists');
    mkdirSync(out);
    writeFileSync(join(out, 'config.json'), '{}');
    const d = dequantizeCheckpoint(checkpoint, { config });
    await expect(writeMlxModelDir(out, d)).rejects.toMatchObject({ code: 'OutputExists' });
    expect(readdirSync(out)).toEqual(['config.json']);
    await checkpoint.close();
  });

  it('a config.json that is not a JSON object is a typed error', async () => {
    const dir = join(tmp, 'badcfg');
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), '{"quantization": ');
    await expect(readModelConfig(dir)).rejects.toMatchObject({ code: 'MlxInvalidConfig' });
    writeFileSync(join(dir, 'config.json'), '[1]');
    await expect(readModelConfig(dir)).rejects.toMatchObject({ code: 'MlxInvalidConfig' });
    const none = join(tmp, 'noconfig');
    mkdirSync(none);
    expect(await readModelConfig(none)).toBeUndefined();
  });
});
