import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TensorportError, type TransferStats } from '@tensorport/core';
import { configureRemote, convertPath, diffPaths, inspectPath, scanPath, validatePath } from '@tensorport/lib/node';
import { requireNginx, startRig, type Rig } from '../../core/test/helpers/nginx.ts';

const FIX = join(import.meta.dirname, '..', '..', '..', 'fixtures');
const ST = join(FIX, 'safetensors/transformer_shard.safetensors');
const SHARDED = join(FIX, 'safetensors/sharded');
const PT = join(FIX, 'torch/checkpoints/transformers.pt');
const NPZ = join(FIX, 'npz/npz/savez.npz');
const EVIL = join(FIX, 'torch/picklescan/data/malicious1.zip');
const COMMIT = '0123456789abcdef0123456789abcdef01234567';

/** Tensors as reported, without the file each lives in (a URL remotely, a path locally). */
const noFile = (ts: readonly object[]): object[] => ts.map((t) => Object.fromEntries(Object.entries(t).filter(([k]) => k !== 'file')));

const nginx = await requireNginx();

describe.skipIf(!nginx)('pipeline commands on URLs and hf:// (nginx)', () => {
  let rig: Rig;
  let out: string;
  const transfers: { input: string; stats: TransferStats }[] = [];
  const shards = Object.fromEntries(readdirSync(SHARDED).filter((f) => !f.endsWith('.manifest.json')).map((f) => [f, join(SHARDED, f)]));

  beforeAll(async () => {
    rig = await startRig(nginx!, { 'model.safetensors': ST, 'ckpt.pt': PT, 'arrays.npz': NPZ, 'evil.pt': EVIL, ...Object.fromEntries(Object.entries(shards).map(([k, v]) => [`sharded/${k}`, v])) }, {
      'test-org/sharded': { commit: COMMIT, files: shards },
      'test-org/torch': { commit: COMMIT, files: { 'pytorch_model.bin': PT } },
    });
    out = mkdtempSync(join(tmpdir(), 'tp-remote-out-'));
    process.env.HF_ENDPOINT = rig.hub;
    configureRemote({ retryDelayMs: 5, maxRetryDelayMs: 20, onTransfer: (input, stats) => transfers.push({ input, stats }) });
  });
  afterAll(async () => {
    delete process.env.HF_ENDPOINT;
    configureRemote({});
    await rig?.stop();
    rmSync(out, { recursive: true, force: true });
  });

  it('inspects a URL like the local file, reading only its header', async () => {
    const remote = await inspectPath(`${rig.cdn}/files/model.safetensors`);
    const local = await inspectPath(ST);
    expect(noFile(remote.tensors)).toEqual(noFile(local.tensors));
    expect(remote.totals).toEqual(local.totals);
    const t = transfers.at(-1)!;
    expect(t.stats.requests).toBe(1);
    expect(t.stats.size).toBe(readFileSync(ST).byteLength);
  });

  it('inspects and validates a sharded hf:// repo and a torch .bin repo', async () => {
    const sharded = await inspectPath('hf://test-org/sharded');
    expect(sharded.tensors.map((t) => t.name)).toEqual((await inspectPath(SHARDED)).tensors.map((t) => t.name));
    const v = await validatePath('hf://test-org/sharded');
    expect(v.valid).toBe(true);
    expect(v.files.length).toBe(5);
    const torch = await inspectPath('hf://test-org/torch');
    expect(torch.format).toBe('torch-zip');
    expect(noFile(torch.tensors)).toEqual(noFile((await inspectPath(PT)).tensors));
    const missing = await validatePath('hf://test-org/torch/nope.bin');
    expect(missing.valid).toBe(false);
    expect(missing.errors[0]!.code).toBe('RemoteNotFound');
  });

  it('scans a remote torch ZIP and names an unsafe one; lists a remote npz', async () => {
    const ok = await scanPath(`${rig.cdn}/files/ckpt.pt`);
    expect(ok.verdict).toBe((await scanPath(PT)).verdict);
    const evil = await scanPath(`${rig.cdn}/files/evil.pt`);
    expect(evil.verdict).toBe('unsafe');
    expect(evil.globals).toEqual((await scanPath(EVIL)).globals);
    const npz = await inspectPath(`${rig.cdn}/files/arrays.npz`);
    expect(noFile(npz.tensors)).toEqual(noFile((await inspectPath(NPZ)).tensors));
  });

  it('diffs a remote checkpoint against the local one: equal', async () => {
    const d = await diffPaths(`${rig.cdn}/files/sharded/model.safetensors.index.json`, SHARDED);
    expect(d.equal).toBe(true);
  });

  it('converts a URL and an hf:// repo into local files, verified bit for bit', async () => {
    const r = await convertPath({ input: `${rig.cdn}/files/ckpt.pt`, output: join(out, 'from-url.safetensors'), verify: true });
    expect(r.verified).toBe(true);
    expect(r.tensors).toBeGreaterThan(0);
    const hub = await convertPath({ input: 'hf://test-org/sharded', output: join(out, 'from-hub/'), verify: true });
    expect(hub.verified).toBe(true);
    expect((await diffPaths(join(out, 'from-hub'), SHARDED)).equal).toBe(true);
  });

  it('leaves nothing behind when the remote input fails', async () => {
    const e = await convertPath({ input: `${rig.cdn}/files/absent.pt`, output: join(out, 'never.safetensors') }).catch((x: unknown) => x);
    expect((e as TensorportError).code).toBe('RemoteNotFound');
    expect(readdirSync(out)).not.toContain('never.safetensors');
  });
});
