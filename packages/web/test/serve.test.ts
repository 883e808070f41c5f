import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CONTENT_SECURITY_POLICY, serveStatic, type StaticServer } from '../server/serve.mjs';

/** Raw requests (fetch would normalise `..` and refuse to send some Host headers). */
function get(port: number, path: string, opts: { method?: string; host?: string } = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((ok, fail) => {
    const req = request({ host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: { host: opts.host ?? `127.0.0.1:${port}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

describe('serveStatic', () => {
  let root: string;
  let outside: string;
  let s: StaticServer;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'tensorport-serve-'));
    outside = await mkdtemp(join(tmpdir(), 'tensorport-outside-'));
    await mkdir(join(root, 'assets'));
    await writeFile(join(root, 'index.html'), '<!doctype html><p>hi</p>');
    await writeFile(join(root, 'assets', 'app.js'), 'export {};');
    await writeFile(join(root, 'assets', 'style.css'), 'p{}');
    await writeFile(join(outside, 'secret.txt'), 'secret');
    await symlink(join(outside, 'secret.txt'), join(root, 'link.txt'));
    s = await serveStatic(root, { port: 0 });
  });
  afterAll(async () => {
    await s?.close();
    await rm(root, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  test('listens on loopback and serves index.html for /', async () => {
    expect(s.host).toBe('127.0.0.1');
    expect(s.url).toBe(`http://127.0.0.1:${s.port}/`);
    const r = await get(s.port, '/');
    expect(r.status).toBe(200);
    expect(r.body).toContain('<p>hi</p>');
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toContain("connect-src 'none'");
    expect(r.headers['x-content-type-options']).toBe('nosniff');
  });

  test('JavaScript is served as text/javascript (module scripts and workers need it)', async () => {
    const js = await get(s.port, '/assets/app.js?v=1');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect((await get(s.port, '/assets/style.css')).headers['content-type']).toBe('text/css; charset=utf-8');
    const head = await get(s.port, '/assets/app.js', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe('10');
    expect(head.body).toBe('');
  });

  test('nothing outside the directory: traversal, encoded traversal, symlinks out, NUL', async () => {
    for (const p of ['/../secret.txt', '/assets/../../secret.txt', '/%2e%2e/secret.txt', '/..%2fsecret.txt', '/link.txt', '/a%00b', '/%E0%A4%A']) {
      const r = await get(s.port, p);
      expect(r.status, p).toBe(404);
      expect(r.body).not.toContain('secret');
    }
    expect((await get(s.port, '/missing.js')).status).toBe(404);
    // Not a path at all: Node's parser refuses it before the handler runs.
    expect((await get(s.port, 'index.html')).status).toBe(400);
  });

  test('only GET and HEAD; only loopback Host names (no DNS rebinding)', async () => {
    expect((await get(s.port, '/', { method: 'POST' })).status).toBe(405);
    expect((await get(s.port, '/', { host: 'evil.example' })).status).toBe(421);
    expect((await get(s.port, '/', { host: `evil.example:${s.port}` })).status).toBe(421);
    expect((await get(s.port, '/', { host: `localhost:${s.port}` })).status).toBe(200);
  });

  test('a missing directory is refused up front', async () => {
    await expect(serveStatic(join(root, 'nope'))).rejects.toThrow();
  });
});
