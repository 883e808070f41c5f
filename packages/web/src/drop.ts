/**
 * Files from a drop: plain files, and the files directly inside a dropped folder (a model
 * directory: index, shards, config.json). Subfolders are not descended into.
 */
export async function filesFromDrop(dt: DataTransfer): Promise<File[]> {
  const entries = [...dt.items].map((item) => (item.kind === 'file' ? item.webkitGetAsEntry?.() ?? null : null));
  if (entries.every((e) => e === null || e.isFile)) return [...dt.files];
  const out: File[] = [];
  for (const entry of entries) {
    if (entry === null) continue;
    if (entry.isFile) out.push(await fileOf(entry as FileSystemFileEntry));
    else if (entry.isDirectory) {
      for (const child of await children(entry as FileSystemDirectoryEntry)) {
        if (child.isFile) out.push(await fileOf(child as FileSystemFileEntry));
      }
    }
  }
  return out;
}

function fileOf(entry: FileSystemFileEntry): Promise<File> {
  return new Promise((ok, fail) => entry.file(ok, fail));
}

async function children(dir: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> {
  const reader = dir.createReader();
  const all: FileSystemEntry[] = [];
  // readEntries returns batches (100 in Chromium) until an empty one.
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((ok, fail) => reader.readEntries(ok, fail));
    if (batch.length === 0) return all;
    all.push(...batch);
  }
}
