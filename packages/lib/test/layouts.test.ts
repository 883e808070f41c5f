import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { quantizeCheckpoint } from '@tensorport/mlx';
import { writeMlxModelLayout } from '../src/index.ts';
import { FileTarget, inspectPath, openPath } from '../src/node/index.ts';

const REPO = join(import.meta.dirname, '../../..');
const INPUT = join(REPO, 'fixtures/safetensors/transformer_shard.safetensors');
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('the mlx-lm model directory as an output layout over a FileTarget', () => {
  it('writes shards, index and config.json that inspect reads back; an existing file is refused without force', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tensorport-layout-'));
    dirs.push(dir);
    const { checkpoint } = await openPath(INPUT);
    try {
      const result = quantizeCheckpoint(checkpoint, { bits: 4, groupSize: 32, config: { model_type: 'test' } });
      const out = join(dir, 'model') + '/';
      const r = await writeMlxModelLayout(result, await FileTarget.at(out, { fsync: false }));
      expect(r.files.sort()).toEqual(['config.json', 'model.safetensors', 'model.safetensors.index.json']);
      expect((await readdir(out)).sort()).toEqual(r.files.sort());
      const report = await inspectPath(out);
      expect(report.quantization!.every((l) => l.bits === 4 && l.groupSize === 32)).toBe(true);

      const again = join(dir, 'again') + '/';
      await writeMlxModelLayout(result, await FileTarget.at(again, { fsync: false }));
      await expect(writeMlxModelLayout(result, await FileTarget.at(again, { fsync: false }))).rejects.toMatchObject({ code: 'OutputExists' });
    } finally {
      await checkpoint.close();
    }
  });
});
