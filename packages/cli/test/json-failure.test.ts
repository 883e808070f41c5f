import { copyFile, truncate, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, listDir, safetensorsFile, tempDir, tensorport } from './helpers.ts';
import { runInProcess as run } from './in-process.ts';

const transformer = join(FIXTURES, 'transformer_shard.safetensors');

/** stdout must be exactly one JSON object (JSON.parse refuses two). */
function failure(stdout: string): { ok: boolean; exitCode: number; error: Record<string, unknown> } {
  const v = JSON.parse(stdout) as { ok: boolean; exitCode: number; error: Record<string, unknown> };
  expect(typeof v).toBe('object');
  return v;
}

describe('--json prints one JSON object on stdout when the command fails', () => {
  it('convert of a truncated file: the reader\'s error with its code, path and offset; exit 1; nothing written', async () => {
    const dir = await tempDir();
    const input = join(dir, 'cut.safetensors');
    await copyFile(transformer, input);
    await truncate(input, 100);
    const r = await run('convert', input, join(dir, 'out.safetensors'), '--json');
    expect(r.code).toBe(1);
    const f = failure(r.stdout);
    expect(f).toMatchObject({ ok: false, exitCode: 1, error: { code: 'InvalidHeaderLength' } });
    expect(String(f.error.message)).toMatch(/header/i);
    // the human line stays on stderr, for whoever watches the terminal
    expect(r.stderr).toMatch(/^tensorport: InvalidHeaderLength: /);
    expect(await listDir(dir)).toEqual(['cut.safetensors']);
  });

  it('inspect of a missing path: IoError naming the path, exit 1', async () => {
    const missing = join(await tempDir(), 'nope.safetensors');
    const r = await run('inspect', missing, '--json');
    expect(r.code).toBe(1);
    expect(failure(r.stdout)).toMatchObject({ ok: false, exitCode: 1, error: { code: 'IoError', path: missing } });
  });

  it('diff with an unreadable side, and quantize of a missing input (commands registered by others) too', async () => {
    const missing = join(await tempDir(), 'nope.safetensors');
    const d = await run('diff', transformer, missing, '--json');
    expect(d.code).toBe(1);
    expect(failure(d.stdout)).toMatchObject({ ok: false, error: { code: 'IoError' } });
    const q = await run('quantize', missing, join(await tempDir(), 'q.safetensors'), '--json');
    expect(q.code).toBe(1);
    expect(failure(q.stdout).ok).toBe(false);
  });

  it('dequantize of a file that is no checkpoint, and of U32 codes whose shapes fit two MLX settings: the error object, exit 1, nothing written', async () => {
    const dir = await tempDir();
    const notes = join(dir, 'notes.txt');
    await writeFile(notes, 'not a model\n');
    const r = await run('dequantize', notes, join(dir, 'out.safetensors'), '--json');
    expect(r.code).toBe(1);
    expect(failure(r.stdout)).toMatchObject({ ok: false, exitCode: 1, error: { code: 'UnknownFormat', path: notes } });
    expect(r.stderr).toMatch(/^tensorport: UnknownFormat: /);
    // 16 words and 4 scales per row fit 4 bits/group 32 and 2 bits/group 64: the command's hint is in the object
    const amb = join(dir, 'amb.safetensors');
    const side = new Uint8Array(8 * 4 * 4);
    await writeFile(amb, safetensorsFile({ 'l.weight': { dtype: 'U32', shape: [8, 16], data: new Uint8Array(8 * 16 * 4) }, 'l.scales': { dtype: 'F32', shape: [8, 4], data: side }, 'l.biases': { dtype: 'F32', shape: [8, 4], data: side } }));
    const a = await run('dequantize', amb, join(dir, 'out.safetensors'), '--json');
    expect(a.code).toBe(1);
    const f = failure(a.stdout);
    expect(f).toMatchObject({ ok: false, exitCode: 1, error: { code: 'MlxAmbiguousQuantization' } });
    expect(String(f.error.message)).toContain('pass --bits and --group-size');
    expect(await listDir(dir)).toEqual(['amb.safetensors', 'notes.txt']);
  });

  it('usage errors found while parsing and after it: InvalidOption with usage: true, exit 2', async () => {
    const dir = await tempDir();
    const cases: string[][] = [
      ['convert', transformer, join(dir, 'o.safetensors'), '--dtype', 'f8', '--json'],
      ['convert', transformer, join(dir, 'o.safetensors'), '--json', '--max-shard-size', '1.5'],
      ['inspect', transformer, '--json', '--bogus'],
      // after parsing: the library refuses the option combination
      ['convert', transformer, join(dir, 'o.safetensors'), '--max-shard-size', '1KB', '--json'],
      ['convert', transformer, join(dir, 'o.onnx'), '--json'],
    ];
    for (const args of cases) {
      const r = await run(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(failure(r.stdout), args.join(' ')).toMatchObject({ ok: false, exitCode: 2, error: { code: 'InvalidOption', usage: true } });
      expect(r.stderr, args.join(' ')).toMatch(/^tensorport: usage: /);
    }
    expect(await listDir(dir)).toEqual([]);
  });

  it('scan of a missing file: the failure object and exit 3 (not a verdict)', async () => {
    const missing = join(await tempDir(), 'nope.pt');
    for (const flag of [['--json'], ['--format', 'json']]) {
      const r = await run('scan', missing, ...flag);
      expect(r.code).toBe(3);
      expect(failure(r.stdout)).toMatchObject({ ok: false, exitCode: 3, error: { code: 'IoError' } });
    }
  });

  it('without --json stdout stays empty; a failing validate keeps its report (valid: false), not the failure object', async () => {
    const missing = join(await tempDir(), 'nope.safetensors');
    const human = await run('inspect', missing);
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    const v = await run('validate', missing, '--json');
    expect(v.code).toBe(1);
    const report = JSON.parse(v.stdout) as { valid: boolean; ok?: boolean };
    expect(report.valid).toBe(false);
    expect(report.ok).toBeUndefined();
  });

  it('the built bin prints the same object', async () => {
    const dir = await tempDir();
    const r = await tensorport('convert', join(dir, 'missing.pt'), join(dir, 'o.safetensors'), '--json');
    expect(r.code).toBe(1);
    expect(failure(r.stdout)).toMatchObject({ ok: false, exitCode: 1, error: { code: 'IoError' } });
    expect(existsSync(join(dir, 'o.safetensors'))).toBe(false);
  });
});
