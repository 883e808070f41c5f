import { baseName, detectFormat, extensionOf, TensorportError, withProgress, type Context, type Format } from '@tensorport/core';
import { writeTorchCheckpoint } from '../torch/writer.ts';
import { isLegacyTorchHead, torchArchiveKind, TORCH_EXTENSIONS } from './identify.ts';
import { firstPresent, isShardedTorch, openShardedTorch, TORCH_INDEX_FILES, TORCH_SINGLE_FILES, validateShardedTorch } from './sharded.ts';
import { openTorchFile, validateTorchFile, type TorchOpenOptions } from './single.ts';

async function sniffFile(ctx: Context): Promise<boolean> {
  const head = await ctx.head();
  if (isLegacyTorchHead(head)) return true;
  const kind = detectFormat(head, await ctx.size());
  if (kind === 'json') return ctx.entry!.endsWith('.bin.index.json');
  if (kind !== 'zip') return false;
  try {
    return torchArchiveKind((await ctx.zip()).entries.map((e) => e.name)) !== null;
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return false;
  }
}

/** PyTorch `torch.save` files (ZIP or legacy) and transformers' sharded `pytorch_model*.bin` folders. */
export const torchFormat: Format<TorchOpenOptions, object> = {
  name: 'torch',
  extensions: TORCH_EXTENSIONS,

  async sniff(ctx) {
    if (ctx.entry === null) return (await firstPresent(ctx, [...TORCH_INDEX_FILES, ...TORCH_SINGLE_FILES])) !== null;
    return sniffFile(ctx);
  },

  open: (ctx, options) => (isShardedTorch(ctx) ? openShardedTorch(ctx, options) : openTorchFile(ctx, undefined, options)),

  async write(tensors, metadata, target, options = {}) {
    const ext = extensionOf(target.name);
    if (target.directory || !TORCH_EXTENSIONS.includes(ext)) {
      throw new TensorportError('InvalidOption', `a torch output is one file ending in ${TORCH_EXTENSIONS.join(', ')}; got ${target.name}`, { path: target.name });
    }
    await target.prepare([target.name]);
    // torch.save(obj, path) names the archive directory after the file's stem.
    const stem = baseName(target.name).slice(0, -ext.length);
    const archiveName = /^[A-Za-z0-9_.-]+$/.test(stem) && stem !== '.' && stem !== '..' ? stem : 'archive';
    const sink = await target.create(target.name);
    await writeTorchCheckpoint({ tensors: withProgress(tensors, options.onProgress), metadata }, sink, { archiveName, ...(target.codec ? { zipCodec: target.codec } : {}) });
    return { files: [target.name], bytes: sink.bytesWritten };
  },

  validate: (ctx, options) => (isShardedTorch(ctx) ? validateShardedTorch(ctx, options) : validateTorchFile(ctx, undefined, options)),
};

export { TORCH_INDEX_FILE, TORCH_INDEX_FILES, TORCH_SINGLE_FILE, TORCH_SINGLE_FILES, openShardedTorch, validateShardedTorch, type ShardedTorchCheckpoint } from './sharded.ts';
export { disallowedGlobals, openTorchFile, scanContext, validateTorchFile, type TorchOpenOptions } from './single.ts';
export { isLegacyTorchHead, torchArchiveKind, torchIdentifier, TORCH_EXTENSIONS, TORCH_KINDS } from './identify.ts';
