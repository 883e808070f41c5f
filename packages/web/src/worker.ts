/// <reference lib="webworker" />
import { inspectFiles } from './inspect/index.ts';

/**
 * Parsing runs here, off the page's thread, through the same readers as the CLI. Files arrive as
 * `File` handles (no bytes copied); every read is a `File.slice()` of the range a reader asks for.
 */

export type Request = { id: number; files: File[] };
export type Response = { type: 'ready' } | { type: 'report'; id: number; report: import('./inspect/report.ts').Report } | { type: 'failed'; id: number; message: string };

declare const self: DedicatedWorkerGlobalScope;

const post = (m: Response) => self.postMessage(m);

self.onmessage = async (ev: MessageEvent<Request>) => {
  const { id, files } = ev.data;
  try {
    post({ type: 'report', id, report: await inspectFiles(files) });
  } catch (e) {
    // inspectFiles turns every defect of the input into a finding; reaching here is a bug.
    post({ type: 'failed', id, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
};

post({ type: 'ready' });
