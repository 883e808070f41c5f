import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffPaths, inspectPath } from '../src/node/index.ts';

/**
 * Issue 11 item 1 through the library: a sharded tied Llama (huggingface_hub, safe_serialization=
 * False) showed 20 tensors where torch sees 21, and diff against the single-file save of the same
 * state dict could not tell a name was gone. expected.json is what torch.load sees.
 */
const REPO = join(import.meta.dirname, '../../..');
const FIX = join(REPO, 'fixtures/transformers');
const expected = JSON.parse(readFileSync(join(FIX, 'expected.json'), 'utf8')) as Record<string, { count: number; tensors: Record<string, unknown> }>;

describe('tied names in inspect and diff', () => {
  it('inspect: stored tensors plus tied aliases are exactly the names torch sees', async () => {
    for (const src of ['tied-sharded', 'tied-single']) {
      const r = await inspectPath(join(FIX, src));
      expect(r.aliases).toEqual({ 'lm_head.weight': 'model.embed_tokens.weight' });
      expect([...r.tensors.map((t) => t.name), ...Object.keys(r.aliases)].sort()).toEqual(Object.keys(expected[src]!.tensors).sort());
    }
  });

  it('diff sharded vs single: equal, the same 20 stored tensors (the tied head an alias on both sides)', async () => {
    const r = await diffPaths(join(FIX, 'tied-sharded'), join(FIX, 'tied-single/pytorch_model.bin'));
    expect(r.equal).toBe(true);
    expect(r.compared).toBe(20);
    expect(r.onlyInA).toEqual([]);
    expect(r.onlyInB).toEqual([]);
  });
});
