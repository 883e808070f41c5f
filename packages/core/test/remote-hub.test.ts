import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRemote, parseHfUri, resolveUrl, safetensorsFormat, TensorportError, type RemoteOptions } from '@tensorport/core';
import { nodeFetch } from '@tensorport/core/node';
import { HUB_TOKEN, requireNginx, startRig, type Rig } from './helpers/nginx.ts';

const FIX = join(import.meta.dirname, '..', '..', '..', 'fixtures');
const ST = join(FIX, 'safetensors/transformer_shard.safetensors');
const SHARDED = join(FIX, 'safetensors/sharded');
const PT = join(FIX, 'torch/checkpoints/transformers.pt');
const COMMIT = '705f74ba5bd5309ca9e6a3de50df9ea722fb280c';

async function failure(p: Promise<unknown>): Promise<TensorportError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TensorportError) return e;
    throw e;
  }
  throw new Error('no error');
}

describe('hf:// addresses', () => {
  it('parses revisions, special refs, repo types and paths as huggingface_hub does', () => {
    expect(parseHfUri('hf://org/repo')).toEqual({ type: '', repo: 'org/repo', revision: 'main', path: '' });
    expect(parseHfUri('hf://org/repo@v1.0/sub/model.safetensors')).toEqual({ type: '', repo: 'org/repo', revision: 'v1.0', path: 'sub/model.safetensors' });
    expect(parseHfUri('hf://org/repo@refs/pr/12/model.safetensors').revision).toBe('refs/pr/12');
    expect(parseHfUri('hf://org/repo@feature%2Fx/a.bin').revision).toBe('feature/x');
    expect(parseHfUri('hf://datasets/org/data/x.npz').type).toBe('datasets');
    expect(parseHfUri('hf://org/repo/dir/na@me.bin').path).toBe('dir/na@me.bin');
    for (const bad of ['hf://gpt2', 'hf://dataset/org/x', 'hf://org/repo@/x', 'hf://org/re--po', 'hf://org/repo/../x']) {
      expect(() => parseHfUri(bad), bad).toThrow(TensorportError);
    }
    const a = parseHfUri('hf://org/repo@refs/pr/1/a b#.bin');
    expect(resolveUrl('http://h/', a, a.path)).toBe('http://h/org/repo/resolve/refs%2Fpr%2F1/a%20b%23.bin');
  });
});

const nginx = await requireNginx();

// The global fetch (the browser's path) and node:http (what the Node entry passes): the same answers,
// and the token stays on the Hub's origin through either one's redirect.
const TRANSPORTS: Array<[string, RemoteOptions]> = [['the global fetch', {}], ['node:http', { fetch: nodeFetch }]];

describe.skipIf(!nginx).each(TRANSPORTS)('Hub-like repos on nginx, through %s', (_, transport) => {
  let rig: Rig;
  let opts: RemoteOptions;
  const shards = Object.fromEntries(readdirSync(SHARDED).filter((f) => !f.endsWith('.manifest.json')).map((f) => [f, join(SHARDED, f)]));

  beforeAll(async () => {
    rig = await startRig(nginx!, { 'model.safetensors': ST }, {
      'test-org/tiny': { commit: COMMIT, files: { 'model.safetensors': ST, 'README.md': join(FIX, 'README.md') } },
      'test-org/sharded': { commit: COMMIT, files: shards },
      'test-org/torch': { commit: COMMIT, files: { 'pytorch_model.bin': PT, 'sub/model.safetensors': ST } },
      'test-org/private': { commit: COMMIT, files: { 'model.safetensors': ST }, private: true },
      'test-org/gated': { commit: COMMIT, files: { 'model.safetensors': ST }, gated: true },
    });
    opts = { ...transport, endpoint: rig.hub, retryDelayMs: 5, maxRetryDelayMs: 20 };
  });
  afterAll(async () => {
    await rig?.stop();
  });

  it('finds model.safetensors in a bare repo: one API request, one probe, through the 302 to the CDN origin', async () => {
    const ctx = await openRemote('hf://test-org/tiny', opts);
    expect(ctx.entry).toBe('model.safetensors');
    expect(ctx.name).toBe('hf://test-org/tiny/model.safetensors');
    const st = await safetensorsFormat.open(ctx);
    expect(st.tensors.map((t) => t.name)).toEqual(JSON.parse(readFileSync(`${ST}.manifest.json`, 'utf8')).tensors.map((t: { name: string }) => t.name).sort());
    expect(ctx.transfer().requests).toBe(2);
    // reads go to the pinned commit, then to the CDN origin
    const uris = rig.log().map((l) => `${l.server} ${l.status} ${l.uri.split('?')[0]}`);
    expect(uris).toContain(`hub 302 /test-org/tiny/resolve/${COMMIT}/model.safetensors`);
    expect(uris.some((u) => u.startsWith('cdn 206 /blobs/'))).toBe(true);
    await ctx.close();
  });

  it('opens a sharded repo by its index, every shard from the same commit', async () => {
    const ctx = await openRemote('hf://test-org/sharded@main', opts);
    expect(ctx.entry).toBe('model.safetensors.index.json');
    const ck = await safetensorsFormat.open(ctx);
    const index = JSON.parse(readFileSync(join(SHARDED, 'model.safetensors.index.json'), 'utf8')) as { weight_map: Record<string, string> };
    expect(ck.tensors.map((t) => t.name).sort()).toEqual(Object.keys(index.weight_map).sort());
    expect((await safetensorsFormat.validate!(ctx)).valid).toBe(true);
    expect(rig.log().filter((l) => l.uri.startsWith('/test-org/sharded/resolve/main/'))).toEqual([]);
    await ck.close();
    await ctx.close();
  });

  it('prefers safetensors, then pytorch_model.bin; names a file or a folder in the repo; web URLs too', async () => {
    expect((await openRemote('hf://test-org/torch', opts)).entry).toBe('pytorch_model.bin');
    const sub = await openRemote(`hf://test-org/torch@${COMMIT}/sub`, opts);
    expect(sub.entry).toBe('model.safetensors');
    expect(sub.path()).toBe(`hf://test-org/torch@${COMMIT}/sub/model.safetensors`);
    const web = await openRemote(`${rig.hub}/test-org/tiny/blob/main/model.safetensors?download=true`, opts);
    expect((await safetensorsFormat.open(web)).tensors.length).toBeGreaterThan(0);
  });

  it('types what is missing, private or gated', async () => {
    expect((await failure(openRemote('hf://test-org/tiny/nope.bin', opts))).code).toBe('RemoteNotFound');
    expect((await failure(openRemote('hf://test-org/tiny@v9/model.safetensors', opts))).message).toMatch(/RevisionNotFound/);
    expect((await failure(openRemote('hf://test-org/absent', opts))).code).toBe('RemoteUnauthorized');
    expect((await failure(openRemote('hf://test-org/private', opts))).code).toBe('RemoteUnauthorized');
    const gated = await failure(openRemote('hf://test-org/gated', { ...opts, token: HUB_TOKEN }));
    expect(gated.code).toBe('RemoteForbidden');
    expect(gated.message).toMatch(/gated/);
    const wrong = await failure(openRemote('hf://test-org/private', { ...opts, token: 'hf_wrong_secret' }));
    expect(wrong.code).toBe('RemoteUnauthorized');
    expect(JSON.stringify(wrong.toJSON()) + wrong.message + String(wrong.stack)).not.toContain('hf_wrong_secret');
  });

  it('sends the token to the endpoint origin only: never across the redirect, never to other hosts', async () => {
    const before = rig.log().length;
    const ctx = await openRemote('hf://test-org/private', { ...opts, token: HUB_TOKEN });
    const st = await safetensorsFormat.open(ctx);
    const t = st.tensors.find((x) => x.byteLength > 0)!;
    expect((await t.range!.source.read(t.range!.offset, t.byteLength)).byteLength).toBe(t.byteLength);
    const plain = await openRemote(`${rig.cdn}/files/model.safetensors`, { ...opts, token: HUB_TOKEN });
    await plain.head();
    const log = rig.log().slice(before);
    expect(log.filter((l) => l.server === 'hub').every((l) => l.auth)).toBe(true);
    expect(log.filter((l) => l.server === 'cdn').length).toBeGreaterThan(1);
    // the CDN answers 400 to a request carrying Authorization: none came
    expect(log.filter((l) => l.server === 'cdn').every((l) => !l.auth && l.status !== 400)).toBe(true);
    await ctx.close();
    await plain.close();
  });
});
