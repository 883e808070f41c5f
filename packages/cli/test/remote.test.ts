import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB_TOKEN, requireNginx, startRig, type Rig } from '../../core/test/helpers/nginx.ts';
import { REPO, tempDir, tensorport } from './helpers.ts';

const ST = join(REPO, 'fixtures/safetensors/transformer_shard.safetensors');
const PT = join(REPO, 'fixtures/torch/checkpoints/transformers.pt');
const EVIL = join(REPO, 'fixtures/torch/picklescan/data/malicious1.zip');
const COMMIT = 'fedcba9876543210fedcba9876543210fedcba98';

const nginx = await requireNginx();

describe.skipIf(!nginx)('tensorport on URLs and hf:// (built CLI, nginx)', () => {
  let rig: Rig;

  beforeAll(async () => {
    rig = await startRig(nginx!, { 'model.safetensors': ST, 'evil.pt': EVIL }, {
      'test-org/tiny': { commit: COMMIT, files: { 'model.safetensors': ST } },
      'test-org/private': { commit: COMMIT, files: { 'pytorch_model.bin': PT }, private: true },
    });
    // the spawned CLI inherits these
    process.env.HF_ENDPOINT = rig.hub;
    delete process.env.HF_TOKEN;
  });
  afterAll(async () => {
    delete process.env.HF_ENDPOINT;
    delete process.env.HF_TOKEN;
    await rig?.stop();
  });

  it('inspect --json a URL: the report on stdout, what it cost on stderr', async () => {
    const r = await tensorport('inspect', `${rig.cdn}/files/model.safetensors`, '--json');
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { tensors: unknown[] };
    expect(report.tensors.length).toBe(JSON.parse(readFileSync(`${ST}.manifest.json`, 'utf8')).tensors.length);
    expect(r.stderr).toMatch(new RegExp(`fetched \\d+ of ${readFileSync(ST).byteLength} bytes in 1 request`));
  });

  // validate and diff of remote inputs are tested through the library (tensorport/test/remote-pipeline.test.ts)
  it('identify a bare hf:// repo: the weights file it resolves to', async () => {
    const id = await tensorport('identify', 'hf://test-org/tiny', '--json');
    expect(id.code, id.stderr).toBe(0);
    expect(JSON.parse(id.stdout)[0]).toMatchObject({ kind: 'safetensors', path: 'hf://test-org/tiny/model.safetensors' });
  });

  it('scan names an unsafe remote pickle (exit 1)', async () => {
    const r = await tensorport('scan', `${rig.cdn}/files/evil.pt`);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/UNSAFE/);
  });

  it('a private repo: 401 without HF_TOKEN, converts with it, and the token is never printed', async () => {
    const denied = await tensorport('inspect', 'hf://test-org/private');
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/RemoteUnauthorized|HF_TOKEN/);
    process.env.HF_TOKEN = HUB_TOKEN;
    try {
      const out = await tempDir();
      const r = await tensorport('convert', 'hf://test-org/private', join(out, 'model.safetensors'), '--verify');
      expect(r.code, r.stderr).toBe(0);
      expect(`${r.stdout}${r.stderr}`).not.toContain(HUB_TOKEN);
      expect((await tensorport('diff', join(out, 'model.safetensors'), PT)).code).toBe(0);
    } finally {
      delete process.env.HF_TOKEN;
    }
    // the CDN origin never saw the token (it answers 400 if it does)
    expect(rig.log().filter((l) => l.server === 'cdn').every((l) => !l.auth && l.status !== 400)).toBe(true);
  });
});
