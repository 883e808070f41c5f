import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, REPO } from './helpers.ts';

describe('tensorport serve', () => {
  it('serves the built inspector page on loopback with its CSP, and stops on SIGINT with exit 0', async () => {
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    const closed = new Promise<number | null>((done) => child.on('close', done));
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      const line = await new Promise<string>((done, fail) => {
        let text = '';
        child.stdout.on('data', (d: Buffer) => {
          text += d.toString();
          if (text.includes('\n')) done(text);
        });
        child.on('close', () => fail(new Error(`serve exited early: ${stderr}`)));
      });
      const url = /serving the inspector at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(line)?.[1];
      expect(url, line).toBeDefined();
      const res = await fetch(url!);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("connect-src 'none'");
      expect(await res.text()).toMatch(/^<!doctype html>/i);
    } finally {
      child.kill('SIGINT');
    }
    expect(await closed).toBe(0);
    expect(stderr).toBe('');
  });
});
