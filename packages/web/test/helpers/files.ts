import { openAsBlob } from 'node:fs';
import { basename } from 'node:path';

/** A fixture as the browser hands it to the worker: a `File` whose bytes are read on demand. */
export async function fileOf(path: string, name = basename(path)): Promise<File> {
  return new File([await openAsBlob(path)], name);
}

export function bytesFile(bytes: Uint8Array<ArrayBuffer>, name: string): File {
  return new File([bytes], name);
}
