// A page that uses the library and nothing else: a picked (dropped) file converted in memory.
import { MemoryFolder, MemoryTarget, convert, memoryContext } from 'tensorport';

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

(window as unknown as { convertPicked: typeof convertPicked }).convertPicked = convertPicked;
document.body.dataset.ready = '1';
