/**
 * A real nginx for the remote tests (Node-only test helper), configured as in
 * /work/shared/reference/remote.md §6: a "hub" origin answering resolve URLs with a 302 to a
 * "cdn" origin on another port (so a token must not follow), the revision API, and the Hub's
 * error answers; the cdn serves content-addressed blobs and plain files with Range, plus a
 * server that ignores Range and a slow one. Everything listens on 127.0.0.1 on free ports.
 *
 *   const nginx = await requireNginx();
 *   describe.skipIf(!nginx)('remote', () => { ... startRig(nginx!, {...}) ... });
 *
 * Missing nginx skips with a message; with TENSORPORT_REQUIRE_INTEROP=1 (CI) it fails instead.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const HUB_TOKEN = 'hf_test_token_0123456789';

export async function requireNginx(): Promise<string | null> {
  const candidates = [process.env.TENSORPORT_NGINX, '/usr/sbin/nginx', 'nginx'].filter((x): x is string => !!x);
  for (const exe of candidates) {
    const r = spawnSync(exe, ['-v'], { encoding: 'utf8' });
    if (r.status === 0) return exe;
  }
  const what = `no nginx (tried ${candidates.join(', ')}; Debian: apt-get install nginx-light)`;
  if (process.env.TENSORPORT_REQUIRE_INTEROP === '1') throw new Error(`interop required (TENSORPORT_REQUIRE_INTEROP=1) but ${what}`);
  console.log(`remote: skipped tests: ${what}`);
  return null;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface RepoSpec {
  /** 40 hex: the commit `main` points at. */
  commit: string;
  /** Repo path → local file to serve. */
  files: Record<string, string>;
  /** Needs `Authorization: Bearer HUB_TOKEN`. */
  private?: boolean;
  /** Answers 403 GatedRepo. */
  gated?: boolean;
}

export interface Rig {
  hub: string;
  cdn: string;
  prefix: string;
  /** Plain files under `${cdn}/files/`; path → served copy (rewrite it to change the file). */
  served(path: string): string;
  /** Requests nginx logged so far (method, uri, status, whether Authorization was sent), both origins. */
  log(): { server: string; uri: string; status: number; auth: boolean }[];
  stop(): Promise<void>;
}

const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

function hubHeaders(): string {
  return `add_header Access-Control-Allow-Origin "*" always;
add_header Access-Control-Expose-Headers "X-Repo-Commit, X-Error-Code, X-Error-Message, ETag, Link, Accept-Ranges, Content-Range, Retry-After" always;
`;
}

/** Starts nginx serving `plain` (path → local file, under /files/) and the Hub-like `repos`. */
export async function startRig(nginx: string, plain: Record<string, string>, repos: Record<string, RepoSpec>): Promise<Rig> {
  const prefix = mkdtempSync(join(tmpdir(), 'tp-nginx-'));
  chmodSync(prefix, 0o755);
  for (const d of ['conf', 'logs', 'tmp', 'run', 'www/cdn/blobs', 'www/cdn/files', 'www/api']) mkdirSync(join(prefix, d), { recursive: true, mode: 0o755 });
  const [hubPort, cdnPort] = [await freePort(), await freePort()];
  const hub = `http://127.0.0.1:${hubPort}`;
  const cdn = `http://127.0.0.1:${cdnPort}`;
  const copy = (from: string, to: string): void => {
    mkdirSync(dirname(to), { recursive: true, mode: 0o755 });
    copyFileSync(from, to);
    chmodSync(to, 0o644); // the worker runs as nobody
  };
  for (const [path, file] of Object.entries(plain)) copy(file, join(prefix, 'www/cdn/files', path));
  let locations = '';
  for (const [repo, spec] of Object.entries(repos)) {
    const siblings = Object.keys(spec.files).map((rfilename) => ({ rfilename }));
    const api = join(prefix, 'www/api', repo);
    mkdirSync(api, { recursive: true, mode: 0o755 });
    writeFileSync(join(api, 'revision.json'), JSON.stringify({ id: repo, sha: spec.commit, siblings }));
    chmodSync(join(api, 'revision.json'), 0o644);
    const guard = spec.private
      ? `if ($http_authorization != "Bearer ${HUB_TOKEN}") { add_header X-Error-Code RepoNotFound always; add_header X-Error-Message "Repository not found" always; return 401; }\n`
      : spec.gated
        ? `add_header X-Error-Code GatedRepo always; add_header X-Error-Message "Access to model ${repo} is restricted." always; return 403;\n`
        : '';
    for (const rev of ['main', spec.commit]) {
      locations += `location = /api/models/${repo}/revision/${rev} { ${hubHeaders()} ${guard} default_type application/json; try_files /api/${repo}/revision.json =404; }\n`;
      for (const [path, file] of Object.entries(spec.files)) {
        const hash = sha256(file);
        copy(file, join(prefix, 'www/cdn/blobs', hash));
        locations += `location = /${repo}/resolve/${rev}/${path} { ${hubHeaders()} ${guard} add_header X-Repo-Commit ${spec.commit} always; add_header X-Linked-Etag '"${hash}"' always; return 302 ${cdn}/blobs/${hash}?X-Amz-Signature=fake&Expires=9999999999; }\n`;
      }
    }
    locations += `location /api/models/${repo}/revision/ { ${hubHeaders()} ${guard} add_header X-Error-Code RevisionNotFound always; return 404; }\n`;
    locations += `location /${repo}/resolve/main/ { ${hubHeaders()} ${guard} add_header X-Repo-Commit ${spec.commit} always; add_header X-Error-Code EntryNotFound always; add_header X-Error-Message "Entry not found" always; return 404; }\n`;
    locations += `location /${repo}/resolve/ { ${hubHeaders()} ${guard} add_header X-Error-Code RevisionNotFound always; return 404; }\n`;
  }
  writeFileSync(join(prefix, 'conf/hub_files.conf'), locations);
  writeFileSync(
    join(prefix, 'conf/nginx.conf'),
    `daemon off;
master_process on;
worker_processes 1;
pid run/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 256; }
http {
  log_format rig '$server_port $status $auth_sent "$request_uri"';
  map $http_authorization $auth_sent { default 1; "" 0; }
  access_log logs/access.log rig;
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  default_type application/octet-stream;
  sendfile on;
  gzip off;
  keepalive_requests 10000;
  server {
    listen 127.0.0.1:${hubPort};
    absolute_redirect off;
    root www;
    include hub_files.conf;
    location /api/ { ${hubHeaders()} add_header X-Error-Code RepoNotFound always; return 401; }
    location / { ${hubHeaders()} add_header X-Error-Code RepoNotFound always; return 401; }
  }
  server {
    listen 127.0.0.1:${cdnPort};
    root www/cdn;
    add_header Access-Control-Allow-Origin "*" always;
    # a presigned URL plus an Authorization header is refused (as S3 does): a leaked token fails loudly
    if ($http_authorization) { return 400; }
    location /blobs/ { }
    location /files/ { }
    location /norange/ { alias www/cdn/files/; max_ranges 0; }
    location /slow/ { alias www/cdn/files/; limit_rate 2k; }
  }
}
`,
  );
  const args = ['-p', `${prefix}/`, '-c', 'conf/nginx.conf', '-e', 'logs/error.log'];
  const child: ChildProcess = spawn(nginx, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitForPort(hubPort, child, () => `${stderr}${existsSync(join(prefix, 'logs/error.log')) ? readFileSync(join(prefix, 'logs/error.log'), 'utf8') : ''}`);
  await waitForPort(cdnPort, child, () => stderr);
  return {
    hub,
    cdn,
    prefix,
    served: (path) => join(prefix, 'www/cdn/files', path),
    log: () =>
      readFileSync(join(prefix, 'logs/access.log'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const m = /^(\d+) (\d+) (\d) "(.*)"$/.exec(line)!;
          return { server: Number(m[1]) === hubPort ? 'hub' : 'cdn', status: Number(m[2]), auth: m[3] === '1', uri: m[4]! };
        }),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess, why: () => string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${why()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`nginx did not listen on ${port}: ${why()}`);
}
