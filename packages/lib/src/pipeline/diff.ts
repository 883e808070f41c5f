import { diffCheckpoints, type Checkpoint, type Context, type DiffOptions, type DiffResult, type Finding } from '@tensorport/core';
import { fromGguf } from '../gguf.ts';
import type { Transformed } from './transform.ts';
import { openInput, type PipelineOptions } from './open.ts';

async function asConverted(c: Checkpoint, other: Checkpoint, ctx: Context): Promise<Transformed> {
  return c.format === 'gguf' && other.format !== 'gguf' ? fromGguf()(c, ctx) : c;
}

export interface DiffReport extends DiffResult {
  a: string;
  b: string;
  formats: [string, string];
  warnings: Finding[];
}

/** Opens two inputs in any formats the registry reads and diffs them tensor by tensor, streaming. */
export async function diff(a: Context, b: Context, options: DiffOptions & PipelineOptions = {}): Promise<DiffReport> {
  const { registry, read, ...diffOptions } = options;
  const pipeline = { ...(registry ? { registry } : {}), ...(read ? { read } : {}) };
  const da = await openInput(a, pipeline);
  try {
    const db = await openInput(b, pipeline);
    try {
      // GGUF against another format: compared as convert writes it (blocks dequantized, llama names mapped back).
      const [va, vb] = await Promise.all([asConverted(da.checkpoint, db.checkpoint, a), asConverted(db.checkpoint, da.checkpoint, b)]);
      const r = await diffCheckpoints(va, vb, diffOptions);
      return { a: a.name, b: b.name, formats: [da.checkpoint.format, db.checkpoint.format], warnings: [...da.warnings, ...db.warnings], ...r };
    } finally {
      await db.checkpoint.close();
    }
  } finally {
    await da.checkpoint.close();
  }
}
