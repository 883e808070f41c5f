/**
 * A fault-injecting HTTP proxy in front of the nginx rig (Node-only test helper), for what nginx
 * cannot do by itself (remote.md §6.1): a reset in the middle of a body, 5xx and 429 that pass on
 * retry, a server that stops honouring Range, a stall after the headers, a file that changes.
 *
 * `${proxy.url}/<fault>/<path>` forwards to `${upstream}/files/<path>`; faults:
 *   ok          forward as is (records the request headers)
 *   reset       the first answer per path is cut after half its body
 *   e503x2      the first two requests per path get 503
 *   e500        every request gets 500
 *   r429        the first request per path gets 429 with Retry-After: 0
 *   lose-range  the first request is forwarded, later ones lose their Range (200, whole body)
 *   hang        headers are forwarded, the body never comes
 *   swap        after the first request, `<path>.v2` is served instead (another file)
 */
import { request as httpRequest, createServer, type IncomingHttpHeaders, type Server } from 'node:http';

export interface FaultProxy {
  url: string;
  /** Request headers seen, in order (to check what was sent, e.g. no token). */
  seen: { path: string; headers: IncomingHttpHeaders }[];
  stop(): Promise<void>;
}

export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const counts = new Map<string, number>();
  const seen: FaultProxy['seen'] = [];
  const up = new URL(upstream);
  const server: Server = createServer((req, res) => {
    const m = /^\/([a-z0-9-]+)\/(.*)$/.exec(req.url ?? '');
    if (!m) {
      res.writeHead(404).end();
      return;
    }
    const [, fault, rest] = m as unknown as [string, string, string];
    const n = (counts.get(req.url!) ?? 0) + 1;
    counts.set(req.url!, n);
    seen.push({ path: req.url!, headers: req.headers });
    const headers: Record<string, string> = {};
    for (const h of ['range', 'if-range', 'accept-encoding']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
    if (fault === 'e503x2' && n <= 2) return void res.writeHead(503, { 'retry-after': '0' }).end('busy');
    if (fault === 'e500') return void res.writeHead(500).end('broken');
    if (fault === 'r429' && n === 1) return void res.writeHead(429, { 'retry-after': '0' }).end('slow down');
    if (fault === 'lose-range' && n > 1) {
      delete headers.range;
      delete headers['if-range'];
    }
    // counted per URL (a query makes a fresh one), forwarded without the query
    const file = rest.split('?')[0]!;
    const path = fault === 'swap' && n > 1 ? `${file}.v2` : file;
    const forward = httpRequest({ host: up.hostname, port: up.port, path: `/files/${path}`, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (fault === 'hang') {
        answer.pause();
        return; // headers sent, body never: the client must time out
      }
      if (fault === 'reset' && n === 1) {
        const length = Number(answer.headers['content-length'] ?? 0);
        let sent = 0;
        answer.on('data', (chunk: Buffer) => {
          const room = Math.floor(length / 2) - sent;
          if (room > 0) res.write(chunk.subarray(0, room));
          sent += chunk.byteLength;
          if (sent >= length / 2) {
            answer.destroy();
            res.socket?.destroy();
          }
        });
        return;
      }
      answer.pipe(res);
    });
    forward.on('error', () => res.socket?.destroy());
    forward.end();
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
