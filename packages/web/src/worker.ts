/// <reference lib="webworker" />
import { inspectFiles } from './inspect/index.ts';
import type { CancelRequest, ConvertRequest, ConvertResponse } from './convert/protocol.ts';
import { cancelConversion, runConversion } from './convert/run.ts';

/**
 * Parsing runs here, off the page's thread, through the same readers as the CLI. Files arrive as
 * `File` handles (no bytes copied); every read is a `File.slice()` of the range a reader asks for.
 */

export type Request = { kind?: 'inspect'; id: number; files: File[] } | ConvertRequest | CancelRequest;
export type Response = ConvertResponse | { type: 'ready' } | { type: 'report'; id: number; report: import('./inspect/report.ts').Report } | { type: 'failed'; id: number; message: string };

declare const self: DedicatedWorkerGlobalScope;

const post = (m: Response) => self.postMessage(m);

self.onmessage = async (ev: MessageEvent<Request>) => {
  const m = ev.data;
  if (m.kind === 'convert') return runConversion(m, post);
  if (m.kind === 'cancel') return cancelConversion(m.id);
  const { id, files } = m;
  try {
    post({ type: 'report', id, report: await inspectFiles(files) });
  } catch (e) {
    // inspectFiles turns every defect of the input into a finding; reaching here is a bug.
    post({ type: 'failed', id, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
};

post({ type: 'ready' });
