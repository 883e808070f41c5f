import { spawn } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, FIXTURES, fileSha256, sparseSafetensors, tempDir, tensorport } from './helpers.ts';

/** Starts `tensorport <command>` (convert), sends SIGINT once a temp file of ours appears under `watch`, resolves to the exit and stderr. */
function interruptWhileWriting(args: string[], watch: string, command = 'convert'): Promise<{ code: number | null; signal: string | null; stderr: string; sawTemp: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let sawTemp = false;
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const poll = setInterval(() => {
      readdir(watch).then(
        (names) => {
          if (!sawTemp && names.some((n) => n.includes('.tensorport-') && n.endsWith('.tmp'))) {
            sawTemp = true;
            child.kill('SIGINT');
          }
        },
        () => undefined,
      );
    }, 10);
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    // 'close': the process has exited and its stdio is drained
    child.on('close', (code, signal) => {
      clearInterval(poll);
      clearTimeout(guard);
      resolve({ code, signal, stderr, sawTemp });
    });
  });
}

describe('Ctrl-C during convert', { timeout: 90_000 }, () => {
  it('a file output: exit 130, one line saying nothing was written, no output and no temp file left', async () => {
    const dir = await tempDir();
    const input = join(dir, 'big.safetensors');
    await sparseSafetensors(input, 512 * 2 ** 20);
    const out = join(dir, 'out.safetensors');
    const r = await interruptWhileWriting([input, out], dir);
    expect(r.sawTemp).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toBe('tensorport: interrupted, nothing written\n');
    expect((await readdir(dir)).sort()).toEqual(['big.safetensors']);
  });

  it('over an existing model directory with --force: the old files are as they were, and the line says so', async () => {
    const dir = await tempDir();
    const input = join(dir, 'big.safetensors');
    await sparseSafetensors(input, 512 * 2 ** 20);
    const model = join(dir, 'model');
    expect((await tensorport('convert', join(FIXTURES, 'minimal.safetensors'), `${model}/`)).code).toBe(0);
    await writeFile(join(model, 'config.json'), '{}\n');
    const before = await fileSha256(join(model, 'model.safetensors'));
    const r = await interruptWhileWriting([input, `${model}/`, '--force', '--max-shard-size', '128MB'], model);
    expect(r.sawTemp).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toBe(`tensorport: interrupted, nothing written (${model}/ is as it was)\n`);
    expect((await readdir(model)).sort()).toEqual(['config.json', 'model.safetensors']);
    expect(await fileSha256(join(model, 'model.safetensors'))).toBe(before);
  });

  it('quantize (through mlx-common runWrite, as dequantize and repack): exit 130, the same line, nothing left', async () => {
    const dir = await tempDir();
    const input = join(dir, 'big.safetensors');
    await sparseSafetensors(input, 512 * 2 ** 20);
    const r = await interruptWhileWriting([input, join(dir, 'q.safetensors')], dir, 'quantize');
    expect(r.sawTemp).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toBe('tensorport: interrupted, nothing written\n');
    expect((await readdir(dir)).sort()).toEqual(['big.safetensors']);
  });
});
