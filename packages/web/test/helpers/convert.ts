import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { REPO_DIR } from './browser.ts';

/**
 * Driving the Convert panel. Automation cannot click a native picker, so `usePickedOpfs` gives the
 * page pickers that return handles of the origin-private file system (under `picked/`): the page
 * writes through them exactly as through a handle from showSaveFilePicker (a writable stream).
 */

export const CLI = join(REPO_DIR, 'packages/cli/bin/tensorport.cjs');

export interface PanelChoice {
  to?: 'safetensors' | 'safetensors-sharded' | 'npz' | 'torch' | 'gguf';
  /** GGUF output: the ggml type ('' keeps the float type). */
  ggufType?: string;
  dtype?: '' | 'f16' | 'bf16' | 'f32';
  /** MB (10^6 bytes). */
  shardMb?: number;
  /** A float input: the MLX quantize choice (bits and group size for affine). */
  quantize?: { mode: 'affine' | 'mxfp4' | 'mxfp8' | 'nvfp4'; bits?: number; groupSize?: number };
}

export async function usePickedOpfs(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const picked = async () => (await navigator.storage.getDirectory()).getDirectoryHandle('picked', { create: true });
    let n = 0;
    const w = window as unknown as Record<string, unknown>;
    // As the real save picker does, the chosen file exists (empty) once it is picked.
    w.showSaveFilePicker = async (o: { suggestedName: string }) => (await picked()).getFileHandle(o.suggestedName, { create: true });
    w.showDirectoryPicker = async () => (await picked()).getDirectoryHandle(`folder-${++n}`, { create: true });
  });
}

export async function withoutPickers(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as Record<string, unknown>;
    w.showSaveFilePicker = undefined;
    w.showDirectoryPicker = undefined;
  });
}

/** Chooses the options, clicks Convert, waits for the outcome: done, failed or cancelled. */
export async function convertInPage(page: Page, c: PanelChoice, timeout = 60_000): Promise<string> {
  await page.selectOption('#convert-to', c.to ?? 'safetensors');
  // GGUF output has no cast (the ggml type says it): the select is disabled then
  if (c.to !== 'gguf') await page.selectOption('#convert-dtype', c.dtype ?? '');
  if (c.quantize) {
    await page.selectOption('#convert-quantize', c.quantize.mode);
    if (c.quantize.bits !== undefined) await page.selectOption('#convert-quant-bits', String(c.quantize.bits));
    if (c.quantize.groupSize !== undefined) await page.selectOption('#convert-quant-group', String(c.quantize.groupSize));
  } else if (await page.$('#convert-quantize')) await page.selectOption('#convert-quantize', '');
  if (c.shardMb !== undefined) await page.fill('#convert-shard', String(c.shardMb));
  if (c.to === 'gguf') await page.selectOption('#convert-gguf-type', c.ggufType ?? '');
  await page.evaluate(() => {
    delete document.body.dataset.convert;
  });
  await page.click('#convert-start');
  await page.waitForFunction(() => ['done', 'failed', 'cancelled'].includes(document.body.dataset.convert ?? ''), undefined, { timeout });
  return (await page.getAttribute('body', 'data-convert')) ?? '';
}

/** Every file under `picked/` in OPFS: path → bytes (small outputs only: base64 across the wire). */
export async function pickedFiles(page: Page): Promise<Map<string, Buffer>> {
  const entries = await page.evaluate(async () => {
    const out: Array<[string, string]> = [];
    const walk = async (dir: FileSystemDirectoryHandle, prefix: string): Promise<void> => {
      for await (const [name, h] of (dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
        if (h.kind === 'directory') await walk(h as FileSystemDirectoryHandle, `${prefix}${name}/`);
        else {
          const bytes = new Uint8Array(await (await (h as FileSystemFileHandle).getFile()).arrayBuffer());
          let s = '';
          for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
          out.push([prefix + name, btoa(s)]);
        }
      }
    };
    const root = await navigator.storage.getDirectory();
    const picked = await root.getDirectoryHandle('picked').catch(() => null);
    if (picked) await walk(picked, '');
    return out;
  });
  return new Map(entries.map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}

export async function clearOpfsFrom(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    for await (const name of (root as unknown as { keys(): AsyncIterable<string> }).keys()) await root.removeEntry(name, { recursive: true });
  });
}

/** Runs the built CLI; resolves with its exit code and output. */
export function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
