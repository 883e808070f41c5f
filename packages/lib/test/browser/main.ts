// A page that uses the library and nothing else: a picked (dropped) file converted in memory.
import { HandleTarget, MemoryFolder, MemoryTarget, TensorportError, convert, memoryContext, type DirectoryHandleLike } from '@tensorport/lib';

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
}

async function convertPicked(): Promise<{ from: string; files: string[]; bytes: number; length: number; sha256: string }> {
  const file = document.querySelector<HTMLInputElement>('#file')!.files![0]!;
  const input = memoryContext(MemoryFolder.fromFiles([file]), file.name);
  const target = new MemoryTarget('model.safetensors');
  try {
    const r = await convert({ input, target });
    const out = target.written.get('model.safetensors')! as Uint8Array<ArrayBuffer>;
    return { from: r.from, files: r.files, bytes: r.bytes, length: out.byteLength, sha256: await sha256(out) };
  } finally {
    await input.close();
  }
}

async function names(dir: FileSystemDirectoryHandle): Promise<string[]> {
  const out: string[] = [];
  for await (const name of (dir as unknown as DirectoryHandleLike).keys()) out.push(name);
  return out.sort();
}

/**
 * The picked file converted into an origin-private directory holding an older sharded write and
 * someone's model_ema.safetensors: refused without force (the error and the entries after it),
 * then written with force (the entries after that).
 */
async function staleShards(): Promise<{ refused: { code: string; message: string; path?: string } | null; afterRefusal: string[]; afterForce: string[] }> {
  const root = await navigator.storage.getDirectory();
  await root.removeEntry('stale', { recursive: true }).catch(() => undefined);
  const dir = await root.getDirectoryHandle('stale', { create: true });
  for (const name of ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json', 'model_ema.safetensors']) {
    const w = await (await dir.getFileHandle(name, { create: true })).createWritable();
    await w.write(new TextEncoder().encode(`old ${name}`));
    await w.close();
  }
  const file = document.querySelector<HTMLInputElement>('#file')!.files![0]!;
  const write = async (force: boolean) => {
    const input = memoryContext(MemoryFolder.fromFiles([file]), file.name);
    try {
      await convert({ input, target: HandleTarget.directory(dir as unknown as DirectoryHandleLike, { force }) });
    } finally {
      await input.close();
    }
  };
  let refused: { code: string; message: string; path?: string } | null = null;
  try {
    await write(false);
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    refused = { code: e.code, message: e.message, ...(e.path === undefined ? {} : { path: e.path }) };
  }
  const afterRefusal = await names(dir);
  await write(true);
  return { refused, afterRefusal, afterForce: await names(dir) };
}

(window as unknown as { convertPicked: typeof convertPicked; staleShards: typeof staleShards }).convertPicked = convertPicked;
(window as unknown as { staleShards: typeof staleShards }).staleShards = staleShards;
document.body.dataset.ready = '1';
