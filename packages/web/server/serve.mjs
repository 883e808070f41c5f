// A small static file server for the built page (`tensorport serve`). Node only; no dependencies.
// It serves files under one directory to loopback by default, sends the page's Content-Security-Policy
// as a header too (a module worker takes its CSP from its own response, not from the page's meta tag),
// and refuses anything that is not a plain GET/HEAD of a file inside that directory.
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { hostname, networkInterfaces } from 'node:os';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built page (`vite build` output) of this package. */
export const WEB_DIST = fileURLToPath(new URL('../dist/', import.meta.url));

/**
 * True when `dir` holds a built page (its index.html), so a server is not started over nothing.
 * @param {string} [dir]
 * @returns {Promise<boolean>}
 */
export async function pageBuilt(dir = WEB_DIST) {
  return stat(join(dir, 'index.html')).then(
    (s) => s.isFile(),
    () => false,
  );
}

/** Same policy as the page's meta tag: own scripts, styles and worker only; no connections at all. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "worker-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'none'",
  "font-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  // Module scripts and module workers are refused unless served as JavaScript.
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/**
 * @typedef {object} ServeOptions
 * @property {number} [port] TCP port; 0 (default) picks a free one.
 * @property {string} [host] Interface to listen on; default 127.0.0.1 (this machine only).
 * @property {string[]} [allowHosts] Further names the page may be reached by (Host header), e.g. a
 *   DNS name of this machine when listening on 0.0.0.0.
 */

/**
 * @typedef {object} StaticServer
 * @property {string} url e.g. `http://127.0.0.1:8080/`
 * @property {number} port
 * @property {string} host
 * @property {import('node:http').Server} server
 * @property {() => Promise<void>} close
 */

/**
 * Serves the files under `dir` until `close()`.
 * @param {string} dir
 * @param {ServeOptions} [options]
 * @returns {Promise<StaticServer>}
 */
export async function serveStatic(dir, options = {}) {
  const host = options.host ?? '127.0.0.1';
  const root = await realpath(resolve(dir));
  if (!(await stat(root)).isDirectory()) throw new Error(`${dir} is not a directory`);
  let port = options.port ?? 0;
  const allowed = hostPolicy(host, options.allowHosts ?? []);
  const server = createServer((req, res) => {
    handle(root, allowed, port, req, res).catch(() => {
      if (!res.headersSent) send(res, 500, 'internal error');
      else res.destroy();
    });
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      ok(undefined);
    });
  });
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    port,
    host,
    server,
    close: () =>
      new Promise((ok, fail) => {
        server.close((e) => (e ? fail(e) : ok(undefined)));
        server.closeAllConnections();
      }),
  };
}

/**
 * @param {string} root
 * @param {(name: string) => boolean} allowed
 * @param {number} port
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 */
async function handle(root, allowed, port, req, res) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'method not allowed', { Allow: 'GET, HEAD' });
  // A Host header naming something else than this server means a DNS-rebinding page is asking
  // (its own domain resolved to us): refuse it, whatever address we listen on.
  const name = hostOf(req.headers.host, port);
  if (name === null || !allowed(name)) return send(res, 421, 'misdirected request');
  const file = await resolveFile(root, req.url ?? '/');
  if (file === null) return send(res, 404, 'not found');
  const info = await stat(file);
  res.writeHead(200, {
    ...HEADERS,
    'Content-Type': TYPES[/** @type {keyof typeof TYPES} */ (extname(file).toLowerCase())] ?? 'application/octet-stream',
    'Content-Length': info.size,
  });
  if (req.method === 'HEAD') return void res.end();
  createReadStream(file).on('error', () => res.destroy()).pipe(res);
}

const HEADERS = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cache-Control': 'no-cache',
};

/**
 * The normalised host name of a Host header (WHATWG URL rules: lower case, IPv4 shorthand such as
 * `127.1` expanded, IPv6 in brackets), or null when it is malformed or names another port.
 * @param {string | undefined} value
 * @param {number} port
 * @returns {string | null}
 */
function hostOf(value, port) {
  if (value === undefined || value === '' || /[/?#@\\\s]/.test(value)) return null;
  let url;
  try {
    url = new URL(`http://${value}/`);
  } catch {
    return null;
  }
  return (url.port === '' ? 80 : Number(url.port)) === port ? url.hostname : null;
}

/**
 * Which Host names are this server: the address it is bound to, `allowHosts`, and
 * - bound to loopback (127.0.0.0/8, ::1, localhost): `localhost` and every loopback address;
 * - bound to every interface (0.0.0.0, ::): also this machine's interface addresses (read per
 *   request, so a new address works) and its host name.
 * A DNS name an attacker controls is never among them, so DNS rebinding fails on every bind address.
 * @param {string} host
 * @param {readonly string[]} allowHosts
 * @returns {(name: string) => boolean}
 */
function hostPolicy(host, allowHosts) {
  const norm = (/** @type {string} */ h) => hostOf(h.includes(':') && !h.startsWith('[') ? `[${h}]` : h, 80);
  const fixed = new Set([host, ...allowHosts].map(norm).filter((h) => h !== null));
  const self = norm(host) ?? '';
  const any = self === '0.0.0.0' || self === '[::]';
  const loopback = (/** @type {string} */ n) => n === 'localhost' || n.endsWith('.localhost') || n === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(n);
  return (name) => {
    if (fixed.has(name)) return true;
    if (any || loopback(self)) {
      if (loopback(name)) return true;
    }
    if (!any) return false;
    if (name === norm(hostname())) return true;
    return Object.values(networkInterfaces()).some((list) => (list ?? []).some((a) => norm(a.address.replace(/%.*$/, '')) === name));
  };
}

/**
 * The file a URL path names inside `root` (a directory gives its index.html), or null. Symlinks
 * are followed only when they stay inside `root`.
 * @param {string} root
 * @param {string} url
 * @returns {Promise<string | null>}
 */
async function resolveFile(root, url) {
  const q = url.indexOf('?');
  let path;
  try {
    path = decodeURIComponent((q === -1 ? url : url.slice(0, q)).split('#')[0] ?? '');
  } catch {
    return null;
  }
  if (!path.startsWith('/') || path.includes('\0')) return null;
  let file = join(root, path);
  if (file !== root && !file.startsWith(root + sep)) return null;
  try {
    file = await realpath(file);
    if (file !== root && !file.startsWith(root + sep)) return null;
    let info = await stat(file);
    if (info.isDirectory()) {
      file = await realpath(join(file, 'index.html'));
      if (!file.startsWith(root + sep)) return null;
      info = await stat(file);
    }
    return info.isFile() ? file : null;
  } catch {
    return null;
  }
}

/**
 * @param {import('node:http').ServerResponse} res
 * @param {number} status
 * @param {string} text
 * @param {Record<string, string>} [extra]
 */
function send(res, status, text, extra = {}) {
  res.writeHead(status, { ...HEADERS, 'Content-Type': 'text/plain; charset=utf-8', ...extra });
  res.end(`${text}\n`);
}
