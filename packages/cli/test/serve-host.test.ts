/**
 * DNS-rebinding protection of `tensorport serve` on every bind address (issue 10 item 13): real
 * HTTP requests with forged Host headers to servers started by the test on 127.0.0.1, 127.0.0.2,
 * 0.0.0.0 and ::, with and without --allow-host.
 */
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer } from '../src/serve.ts';

function get(connect: string, port: number, host: string): Promise<number> {
  return new Promise((done, fail) => {
    const req = request({ host: connect, port, path: '/', headers: { host }, setHost: false }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
    });
    req.on('error', fail);
    req.end();
  });
}

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function serve(host: string, allowHosts: string[] = []): Promise<number> {
  const s = await startServer({ port: 0, host, allowHosts });
  open.push(s);
  return Number(new URL(s.url).port);
}

const FORGED = ['evil.example', 'localhost.evil.example', '127.0.0.1.nip.io', 'attacker.localhost.example', ''];
const external = Object.values(networkInterfaces()).flatMap((l) => l ?? []).find((a) => a.family === 'IPv4' && !a.internal)?.address;

describe('serve refuses Host names that are not this server (421)', () => {
  it.each(['127.0.0.1', '127.0.0.2'])('bound to %s: loopback names pass, forged names are refused', async (bind) => {
    const port = await serve(bind);
    for (const h of [`${bind}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) {
      expect(await get(bind, port, h), h).toBe(200);
    }
    for (const h of FORGED.map((f) => (f ? `${f}:${port}` : f))) expect(await get(bind, port, h), h).toBe(421);
    // The right name on another port is another origin.
    expect(await get(bind, port, `localhost:${port + 1}`)).toBe(421);
  });

  it('bound to 0.0.0.0: loopback and this machine\'s interface addresses pass; forged names are refused', async () => {
    const port = await serve('0.0.0.0');
    expect(await get('127.0.0.1', port, `localhost:${port}`)).toBe(200);
    expect(await get('127.0.0.1', port, `127.0.0.1:${port}`)).toBe(200);
    if (external) expect(await get(external, port, `${external}:${port}`)).toBe(200);
    for (const h of FORGED.map((f) => (f ? `${f}:${port}` : f))) expect(await get('127.0.0.1', port, h), h).toBe(421);
    expect(await get('127.0.0.1', port, `0.0.0.1:${port}`)).toBe(421);
  });

  it('bound to :: (when the machine has IPv6): the same rules', async (ctx) => {
    let port: number;
    try {
      port = await serve('::');
    } catch {
      return ctx.skip();
    }
    expect(await get('127.0.0.1', port, `localhost:${port}`)).toBe(200);
    expect(await get('127.0.0.1', port, `evil.example:${port}`)).toBe(421);
  });

  it('--allow-host adds a name (e.g. the machine\'s DNS name); everything else stays refused', async () => {
    const port = await serve('0.0.0.0', ['models.lab.internal']);
    expect(await get('127.0.0.1', port, `models.lab.internal:${port}`)).toBe(200);
    expect(await get('127.0.0.1', port, `MODELS.lab.internal:${port}`)).toBe(200);
    expect(await get('127.0.0.1', port, `evil.example:${port}`)).toBe(421);
  });

  it('bound to a non-loopback address: that address only, not loopback names', async (ctx) => {
    if (!external) return ctx.skip();
    const port = await serve(external);
    expect(await get(external, port, `${external}:${port}`)).toBe(200);
    expect(await get(external, port, `localhost:${port}`)).toBe(421);
    expect(await get(external, port, `evil.example:${port}`)).toBe(421);
  });
});
