import { diffCheckpoints, type Context, type DiffOptions, type DiffResult, type Finding } from '@tensorport/core';
import { openInput, type PipelineOptions } from './open.ts';

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
      const r = await diffCheckpoints(da.checkpoint, db.checkpoint, diffOptions);
      return { a: a.name, b: b.name, formats: [da.checkpoint.format, db.checkpoint.format], warnings: [...da.warnings, ...db.warnings], ...r };
    } finally {
      await db.checkpoint.close();
    }
  } finally {
    await da.checkpoint.close();
  }
}
