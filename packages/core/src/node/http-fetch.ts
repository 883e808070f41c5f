import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';

/**
 * The part of `fetch` that remote/http.ts uses (GET, request headers, redirect following, an abort
 * signal; status, final URL, headers and a byte stream back), over node:http. Node's own fetch
 * (undici) spends about a third more CPU per received byte on its web-stream body, and a loopback
 * or LAN transfer is CPU-bound in Node: measured in docs/benchmarks.md (issue 31, remote).
 *
 * As fetch does: redirects (301, 302, 303, 307, 308) are followed up to 20 times, and credentials
 * (Authorization, Cookie) are dropped when a redirect leaves the origin (the Hub's resolve URL sends
 * the file to a CDN, which must not see the token). Unlike fetch, no Accept-Encoding is sent and no
 * body is decoded: Range reads need the stored bytes, and a coded answer is refused by the caller.
 */
const MAX_REDIRECTS = 20;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const CREDENTIALS = ['authorization', 'cookie', 'proxy-authorization'];
/** Chunks (about 64 KiB each) queued in a body before the socket is paused. */
const BODY_CHUNKS = 16;

// Keep-alive, as fetch: ranges of one file reuse their connections. Idle sockets are unref'd by Node.
const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

interface FetchInit {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  redirect?: 'follow' | 'error' | 'manual';
}

/** fetch's failure: a TypeError whose `cause` is the socket's error (with its `code`). */
function fetchFailed(cause: unknown): TypeError {
  return new TypeError('fetch failed', { cause });
}

export const nodeFetch = (async (input: string | URL, init: FetchInit = {}): Promise<Response> => {
  let url = new URL(String(input));
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(init.headers ?? {})) headers[k.toLowerCase()] = v;
  for (let hops = 0; ; hops++) {
    const res = await request(url, headers, init.signal);
    const location = res.headers.location;
    if (!REDIRECTS.has(res.statusCode ?? 0) || location === undefined || init.redirect === 'manual') return answer(res, url, init.signal);
    res.resume();
    if (init.redirect === 'error') throw fetchFailed(new Error(`redirect to ${location}`));
    if (hops >= MAX_REDIRECTS) throw fetchFailed(new Error('redirect count exceeded'));
    const next = new URL(location, url);
    if (next.protocol !== 'http:' && next.protocol !== 'https:') throw fetchFailed(new Error(`redirect to a ${next.protocol} URL`));
    if (next.origin !== url.origin) for (const h of CREDENTIALS) delete headers[h];
    url = next;
  }
}) as typeof fetch;

function request(url: URL, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return reject(fetchFailed(new Error(`unsupported protocol ${url.protocol}`)));
    const get = url.protocol === 'https:' ? https.get : http.get;
    const req = get(url, { headers, agent: agents[url.protocol] }, resolve);
    const onAbort = (): void => { req.destroy(signal!.reason); };
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (e) => reject(signal?.aborted ? signal.reason : fetchFailed(e)));
    req.on('close', () => signal?.removeEventListener('abort', onAbort));
  });
}

function answer(res: IncomingMessage, url: URL, signal: AbortSignal | undefined): Response {
  const headers = new Headers();
  for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const status = res.statusCode ?? 0;
  const empty = status === 204 || status === 304;
  return {
    status,
    ok: status >= 200 && status <= 299,
    url: url.href,
    headers,
    body: empty ? (res.resume(), null) : bodyOf(res, signal),
  } as Response;
}

/** The response body as a byte stream that pauses the socket while the reader is behind. */
function bodyOf(res: IncomingMessage, signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  // Once the reader cancels or the stream ends, data still buffered in the socket is dropped.
  let open = true;
  const onAbort = (): void => { res.destroy(signal!.reason); };
  const settle = (how: () => void): void => {
    if (!open) return;
    open = false;
    signal?.removeEventListener('abort', onAbort);
    how();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      signal?.addEventListener('abort', onAbort, { once: true });
      res.on('data', (b: Buffer) => {
        if (!open) return;
        controller.enqueue(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) res.pause();
      });
      res.on('end', () => settle(() => controller.close()));
      // A reset or an abort mid-body errors the reader, as fetch's does.
      res.on('error', (e) => settle(() => controller.error(signal?.aborted ? signal.reason : fetchFailed(e))));
      res.on('close', () => settle(() => controller.error(signal?.aborted ? signal.reason : fetchFailed(new Error('the connection closed mid-body')))));
      // aborted between the headers and now: no 'abort' event is coming
      if (signal?.aborted) onAbort();
    },
    pull() {
      res.resume();
    },
    cancel() {
      settle(() => res.destroy());
    },
  }, { highWaterMark: BODY_CHUNKS });
}
