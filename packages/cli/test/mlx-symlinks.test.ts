/**
 * MLX model directories copy the input's tokenizer and other small files: only regular files whose
 * real path stays inside the input directory (or its Hugging Face cache repo's blobs/) are copied;
 * symlinks elsewhere, procfs, FIFOs are skipped with a warning naming them (issue 10 item 9).
 * Real symlinks, a real FIFO, the built CLI.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listDir, safetensorsFile, tempDir, tensorport } from './helpers.ts';

function weights(): Uint8Array {
  const data = new Uint8Array(64 * 64 * 4);
  const v = new Float32Array(data.buffer);
  for (let i = 0; i < v.length; i++) v[i] = Math.sin(i) * 0.02;
  return safetensorsFile({ 'model.layers.0.mlp.down_proj.weight': { dtype: 'F32', shape: [64, 64], data } });
}
const CONFIG = JSON.stringify({ model_type: 'llama', hidden_size: 64 });

describe('files copied into an MLX model directory', () => {
  it('symlinks out of the input directory, procfs and FIFOs are skipped and named; links inside are copied', async () => {
    const root = await tempDir();
    const secret = join(root, 'hf-home');
    await mkdir(secret);
    await writeFile(join(secret, 'token'), 'hf_SECRETTOKEN');
    const src = join(root, 'src');
    await mkdir(join(src, 'sub'), { recursive: true });
    await writeFile(join(src, 'model.safetensors'), weights());
    await writeFile(join(src, 'config.json'), CONFIG);
    await symlink(join(secret, 'token'), join(src, 'tokenizer.json'));
    await symlink('/proc/self/environ', join(src, 'notes.txt'));
    await symlink('../hf-home/token', join(src, 'relative.txt'));
    await symlink(join(src, 'missing'), join(src, 'dangling.txt'));
    execFileSync('mkfifo', [join(src, 'pipe.txt')]);
    await writeFile(join(src, 'sub', 'template.jinja'), '{{ messages }}');
    await symlink('sub/template.jinja', join(src, 'chat_template.jinja'));
    await writeFile(join(src, 'tokenizer_config.json'), '{}');

    const out = join(root, 'q');
    const r = await tensorport('quantize', src, `${out}/`, '--bits', '4', '--group-size', '64');
    expect(r.code).toBe(0);
    expect(await listDir(out)).toEqual(['chat_template.jinja', 'config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer_config.json']);
    expect(await readFile(join(out, 'chat_template.jinja'), 'utf8')).toBe('{{ messages }}');
    const warnings = r.stderr.split('\n').filter((l) => l.startsWith('tensorport: warning:'));
    for (const name of ['tokenizer.json', 'notes.txt', 'relative.txt', 'dangling.txt', 'pipe.txt']) {
      expect(warnings.some((w) => w.includes(name) && /not copied/.test(w)), `${name} in ${r.stderr}`).toBe(true);
    }
    expect(warnings.find((w) => w.includes('notes.txt'))).toContain('/proc/');
    expect(r.stderr).not.toContain('hf_SECRETTOKEN');
    expect(r.stdout).not.toContain('hf_SECRETTOKEN');
  }, 30_000);

  it('a Hugging Face cache snapshot: links into the same repo\'s blobs/ are copied, into another repo\'s are not', async () => {
    const root = await tempDir();
    const repo = join(root, 'hub', 'models--org--tiny');
    const other = join(root, 'hub', 'models--org--other');
    await mkdir(join(repo, 'blobs'), { recursive: true });
    await mkdir(join(other, 'blobs'), { recursive: true });
    const snap = join(repo, 'snapshots', '0123abcd');
    await mkdir(snap, { recursive: true });
    const blobs: Array<[string, string | Uint8Array]> = [
      ['model.safetensors', weights()],
      ['config.json', CONFIG],
      ['tokenizer.json', '{"version": "hf-cache"}'],
    ];
    for (const [i, [name, body]] of blobs.entries()) {
      await writeFile(join(repo, 'blobs', `b${i}`), body);
      await symlink(`../../blobs/b${i}`, join(snap, name));
    }
    await writeFile(join(other, 'blobs', 'x'), 'someone else\'s file');
    await symlink('../../../models--org--other/blobs/x', join(snap, 'special_tokens_map.json'));

    const out = join(root, 'q');
    const r = await tensorport('quantize', snap, `${out}/`, '--bits', '4', '--group-size', '64');
    expect(r.code).toBe(0);
    expect(await listDir(out)).toEqual(['config.json', 'model.safetensors', 'model.safetensors.index.json', 'tokenizer.json']);
    expect(await readFile(join(out, 'tokenizer.json'), 'utf8')).toBe('{"version": "hf-cache"}');
    expect(r.stderr).toMatch(/warning: .*special_tokens_map\.json not copied: it resolves to .*models--org--other/);
  }, 30_000);
});
