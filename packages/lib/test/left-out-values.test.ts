import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { convertPath, inspectPath } from '../src/node/index.ts';

/**
 * Issue 11 item 5: a training checkpoint's epoch, step, learning rate and optimizer param groups
 * were left out silently by convert and inspect. fixtures/transformers/training.pt is torch.save's;
 * expected.json lists its leaves as torch.load sees them.
 */
const REPO = join(import.meta.dirname, '../../..');
const TRAINING = join(REPO, 'fixtures/transformers/training.pt');
const leaves = (JSON.parse(readFileSync(join(REPO, 'fixtures/transformers/expected.json'), 'utf8')) as { 'training.pt': { leaves: Record<string, string> } })['training.pt'].leaves;
const nonTensors = Object.entries(leaves).filter(([, t]) => t !== 'tensor');
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('non-tensor values left out are named', () => {
  it('inspect and convert warn once, naming every left-out path torch sees (with its type)', async () => {
    const report = await inspectPath(TRAINING);
    expect(report.tensors.map((t) => t.name).sort()).toEqual(Object.entries(leaves).filter(([, t]) => t === 'tensor').map(([k]) => k).sort());
    const dir = await mkdtemp(join(tmpdir(), 'tp-left-out-'));
    dirs.push(dir);
    const converted = await convertPath({ input: TRAINING, output: join(dir, 'out.safetensors'), fsync: false });
    for (const warnings of [report.warnings, converted.warnings]) {
      const w = warnings.filter((f) => f.code === 'TorchValueDropped');
      expect(w.length).toBe(1);
      expect(w[0]!.message).toMatch(new RegExp(`^${nonTensors.length} non-tensor values left out`));
      // the message names the first 20; torch's types: int, float, bool, NoneType (ours: None)
      const named = nonTensors.filter(([path]) => w[0]!.message.includes(`${path} (`));
      expect(named.length).toBe(Math.min(20, nonTensors.length));
      for (const path of ['epoch', 'step', 'lr', 'optimizer.param_groups.0.lr']) expect(w[0]!.message).toContain(`${path} (`);
    }
  });
});
