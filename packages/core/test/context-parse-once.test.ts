import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryFolder, memoryContext, safetensorsFormat, type Context } from '@tensorport/core';

const FIX = join(import.meta.dirname, '..', '..', '..', 'fixtures', 'safetensors');

async function bytesRead(ctx: Context, files: readonly string[]): Promise<number> {
  let n = 0;
  for (const f of files) n += (await ctx.source(f)).bytesRead;
  return n;
}

describe('a Context parses a safetensors header once', () => {
  it('validate, then open: the open reads nothing more and gives the validated tensors', async () => {
    const name = 'transformer_shard.safetensors';
    const ctx = memoryContext(new MemoryFolder([[name, readFileSync(join(FIX, name))]]), name);
    const report = await safetensorsFormat.validate!(ctx);
    expect(report.valid).toBe(true);
    const read = await bytesRead(ctx, [name]);
    expect(read).toBeGreaterThan(0);
    const ckpt = await safetensorsFormat.open(ctx);
    expect(await bytesRead(ctx, [name])).toBe(read);
    expect(ckpt.tensors.length).toBe((await ctx.safetensorsHeader()).tensors.length);
    expect(ckpt.tensors.length).toBeGreaterThan(0);
  });

  it('a sharded checkpoint: each shard header read once across validate and open', async () => {
    const dir = join(FIX, 'sharded');
    const files = readdirSync(dir).filter((f) => !f.endsWith('.manifest.json'));
    const ctx = memoryContext(new MemoryFolder(files.map((f) => [f, readFileSync(join(dir, f))] as const)), null);
    expect((await safetensorsFormat.validate!(ctx)).valid).toBe(true);
    const shards = files.filter((f) => f.endsWith('.safetensors'));
    expect(shards.length).toBeGreaterThan(1);
    const read = await bytesRead(ctx, shards);
    const ckpt = await safetensorsFormat.open(ctx);
    expect(await bytesRead(ctx, shards)).toBe(read);
    expect(ckpt.tensors.length).toBeGreaterThan(shards.length);
  });

  it('remembers a failure: validate reports it, open throws the same code', async () => {
    const bytes = readFileSync(join(FIX, 'transformer_shard.safetensors'));
    const bad = bytes.slice(0, bytes.length - 1); // the last tensor runs past the end
    const ctx = memoryContext(new MemoryFolder([['bad.safetensors', bad]]), 'bad.safetensors');
    const report = await safetensorsFormat.validate!(ctx);
    expect(report.valid).toBe(false);
    const code = report.errors[0]!.code;
    const opened = await safetensorsFormat.open(ctx).then(() => null, (e: { code?: string }) => e.code);
    expect(opened).toBe(code);
  });
});

describe('Context.forget', () => {
  it('lets go of what was parsed, keeps the sources open, and parses again when asked', async () => {
    const name = 'transformer_shard.safetensors';
    const ctx = memoryContext(new MemoryFolder([[name, readFileSync(join(FIX, name))]]), name);
    const source = await ctx.source();
    const header = await ctx.safetensorsHeader();
    const read = source.bytesRead;
    expect(await ctx.safetensorsHeader()).toBe(header);
    ctx.forget!();
    expect(await ctx.source()).toBe(source);
    const again = await ctx.safetensorsHeader();
    expect(again).not.toBe(header);
    expect(again.tensors.map((t) => t.name)).toEqual(header.tensors.map((t) => t.name));
    // Parsed afresh: the header bytes were read a second time, from the same open source.
    expect(source.bytesRead).toBeGreaterThan(read);
    await ctx.close();
  });
});
