import type { KindIdentifier, KindInfo } from '@tensorport/core';
import { startsWithProto } from '../pickle/opcodes.ts';

export const TORCH_EXTENSIONS = ['.pt', '.pth', '.bin', '.ckpt'];

/** PROTO 2, LONG1 of 10 bytes: the magic number 0x1950a86a20f9469cfc6c torch's legacy save writes first. */
export const LEGACY_HEAD = [0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];

export function isLegacyTorchHead(head: Uint8Array): boolean {
  return LEGACY_HEAD.every((b, i) => head[i] === b);
}

/**
 * What a ZIP's member names say about torch: every member under one `<prefix>/`, with
 * `<prefix>/data.pkl` (torch.save) or `<prefix>/constants.pkl` / `<prefix>/code/` (TorchScript,
 * which the reader refuses precisely).
 */
export function torchArchiveKind(names: readonly string[]): 'torch-zip' | 'torchscript' | null {
  const p = singlePrefix(names);
  if (p === null) return null;
  if (names.includes(`${p}/constants.pkl`) || names.some((n) => n.startsWith(`${p}/code/`))) return 'torchscript';
  return names.includes(`${p}/data.pkl`) ? 'torch-zip' : null;
}

function singlePrefix(names: readonly string[]): string | null {
  const prefixes = new Set(names.map((n) => (n.includes('/') ? n.slice(0, n.indexOf('/')) : '')));
  if (prefixes.size !== 1 || prefixes.has('')) return null;
  return [...prefixes][0]!;
}

/** The kinds torch's package names: what torch.save, torch.jit.save and torch.export.save write, and bare pickles. */
export const TORCH_KINDS = {
  'torch-index': {
    what: 'a sharded PyTorch index (JSON with weight_map naming .bin shards)',
    can: 'convert, inspect, validate (with its shards)',
    extensions: ['.json'],
  },
  'torch-zip': { what: 'a PyTorch ZIP checkpoint (torch.save, torch >= 1.6)', can: 'convert, inspect, validate, scan', extensions: TORCH_EXTENSIONS },
  'torch-legacy': { what: 'a legacy PyTorch checkpoint (pickle stream, torch < 1.6)', can: 'convert, inspect, validate, scan', extensions: TORCH_EXTENSIONS },
  torchscript: {
    what: 'a TorchScript archive (torch.jit.save: code/ and constants.pkl)',
    can: 'scan only; not supported for conversion: it holds code, not just weights',
    extensions: ['.pt', '.pth', '.ptl', '.torchscript', '.zip'],
  },
  pickle: { what: 'a bare Python pickle', can: 'scan only; not supported for conversion: no tensor layout to read', extensions: ['.pkl', '.pickle', '.pt', '.pth', '.bin'] },
  'torch-export': {
    what: 'a torch.export archive (.pt2: a ZIP with archive_format "pt2", models/ and data/weights/)',
    can: 'not supported: it holds an exported program, not a state dict (torch.export.load it, then save its state_dict)',
    extensions: ['.pt2'],
  },
} as const satisfies Record<string, KindInfo>;

/**
 * torch's part of `identify`: ZIP archives by member names (torch.export's `<prefix>/archive_format`
 * first: a .pt2 is no checkpoint), the legacy magic number, any other pickle opening with PROTO 0–5, and a
 * shard index whose weight_map names only `.bin` files.
 */
export const torchIdentifier: KindIdentifier = {
  name: 'torch',
  kinds: TORCH_KINDS,
  async identify(probe) {
    const head = probe.head;
    switch (probe.coarse) {
      case 'zip': {
        const names = await probe.zipNames();
        if (names === null) return null;
        const p = singlePrefix(names);
        // torch.export.save (torch/export/pt2_archive): `<p>/archive_format` holds "pt2"
        if (p !== null && names.includes(`${p}/archive_format`)) return { kind: 'torch-export' };
        const kind = torchArchiveKind(names);
        return kind ? { kind } : null;
      }
      case 'json': {
        const text = await probe.jsonWindow();
        return text.includes('"weight_map"') && /\.bin"/.test(text) && !/\.safetensors"/.test(text) ? { kind: 'torch-index' } : null;
      }
      case 'unknown':
        // core's detection leaves pickles unknown: the PROTO opcode is this package's magic
        return startsWithProto(head) ? { kind: isLegacyTorchHead(head) ? 'torch-legacy' : 'pickle' } : null;
      default:
        return null;
    }
  },
};
