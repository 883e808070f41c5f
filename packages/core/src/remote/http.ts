import { TensorportError, type ErrorCode } from '../errors.ts';
import { lendChunk } from '../io/recycle.ts';

/**
 * One ranged GET with the checks every answer gets, retries for what is transient, and typed
 * errors for the rest. Browser-safe: only the global `fetch`, `AbortController` and timers.
 */
export interface HttpOptions {
  /** Bearer token, sent only to `tokenOrigin` (the Hub endpoint's origin); never logged. */
  token?: string;
  tokenOrigin?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Retries after a transient failure (reset, 408, 429, 5xx, timeout); default 5. */
  retries?: number;
  /** First backoff in ms, doubled per retry up to maxRetryDelayMs (defaults 1000 and 8000, huggingface_hub's). */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** A request (headers and body) that takes longer than this is aborted and retried; default 60 s. */
  timeoutMs?: number;
  /** Cancels everything; not retried. */
  signal?: AbortSignal;
  /** Send `If-Range` with the pinned strong ETag (default: yes outside browsers, where it costs a CORS preflight). */
  ifRange?: boolean;
  /** Extra request headers (e.g. User-Agent in Node). */
  headers?: Record<string, string>;
}

/** What a file looked like on its first answer: later answers must agree. */
export interface Pin {
  size: number;
  /** A strong ETag, or null when the server sent none (or only a weak one). */
  etag: string | null;
}

export interface RangeAnswer {
  status: number;
  /** `Content-Range` total, or Content-Length for a 200. */
  total: number | null;
  etag: string | null;
  /** The URL after redirects (pin it: later reads skip the resolver). */
  url: string;
  body: Uint8Array;
}

export interface Counters {
  requests: number;
  bytesTransferred: number;
}

const DEFAULTS = { retries: 5, retryDelayMs: 1000, maxRetryDelayMs: 8000, timeoutMs: 60_000 };
/** Waits longer than this for a Retry-After are not worth it: the failure is reported instead. */
const MAX_RETRY_AFTER_MS = 60_000;

const IN_BROWSER = typeof (globalThis as { document?: unknown }).document !== 'undefined' || typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== 'undefined';

export function defaultIfRange(options: HttpOptions): boolean {
  return options.ifRange ?? !IN_BROWSER;
}

/** A URL for messages: no query (signed CDN URLs carry signatures) and no credentials. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<url>';
  }
}

function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** `bytes a-b/total`, `bytes a-b/*` or `bytes * /total`, parsed strictly (RFC 9110 §14.4). */
export function parseContentRange(value: string | null): { first: number | null; last: number | null; total: number | null } | null {
  if (value === null) return null;
  const m = /^\s*bytes\s+(?:(\d+)-(\d+)|\*)\/(\d+|\*)\s*$/i.exec(value);
  if (!m) return null;
  const num = (s: string | undefined): number | null => {
    if (s === undefined || s === '*') return null;
    const n = Number(s);
    return Number.isSafeInteger(n) ? n : NaN;
  };
  const first = num(m[1]);
  const last = num(m[2]);
  const total = num(m[3]);
  if ([first, last, total].some((n) => Number.isNaN(n))) return null;
  if (first !== null && last !== null && last < first) return null;
  return { first, last, total };
}

function strongEtag(value: string | null): string | null {
  return value !== null && /^"[^"]*"$/.test(value.trim()) ? value.trim() : null;
}

/** Seconds from `Retry-After` (a number or an HTTP date) or the Hub's `RateLimit: "…";r=0;t=N`. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  const rl = headers.get('ratelimit');
  if (rl) {
    const r = /;\s*r=(\d+)/.exec(rl);
    const t = /;\s*t=(\d+)/.exec(rl);
    if (r && t && Number(r[1]) === 0) return Number(t[1]) * 1000;
  }
  const ra = headers.get('retry-after');
  if (ra === null) return null;
  if (/^\s*\d+\s*$/.test(ra)) return Number(ra) * 1000;
  const date = Date.parse(ra);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

class Transient extends Error {
  constructor(
    message: string,
    readonly code: ErrorCode,
    readonly waitMs: number | null = null,
    /** Bytes of the body that arrived before the failure (resumed, not refetched). */
    readonly partial: Uint8Array | null = null,
  ) {
    super(message);
  }
}

/** The typed error for a final HTTP status; the Hub's X-Error-Code says which kind of missing. */
function statusError(status: number, headers: Headers, name: string): TensorportError {
  const hub = headers.get('x-error-code');
  const why = headers.get('x-error-message');
  const detail = `${hub ? ` (${hub}${why ? `: ${why}` : ''})` : ''}`;
  const code: ErrorCode = status === 401 ? 'RemoteUnauthorized' : status === 403 ? 'RemoteForbidden' : status === 404 || status === 410 ? 'RemoteNotFound' : 'RemoteHttpError';
  const hint =
    status === 401 ? ': missing, private or gated; set HF_TOKEN for a Hub repo' :
    status === 403 ? (hub === 'GatedRepo' ? ': gated; accept its terms on the Hub with the account of HF_TOKEN' : ': the token lacks access') :
    status === 404 ? (hub === 'RevisionNotFound' ? ': no such revision' : hub === 'RepoNotFound' ? ': no such repository' : ': no such file') :
    status === 400 ? ': refused (a file too large for plain HTTP, or a bad request)' : '';
  return new TensorportError(code, `${name}: HTTP ${status}${detail}${hint}`, { path: name });
}

function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** Reads at most `max` body bytes; more is a protocol error, fewer is returned (the caller decides). */
async function readBody(res: Response, max: number, name: string, pooled = false): Promise<{ bytes: Uint8Array; complete: boolean }> {
  if (!res.body) return { bytes: new Uint8Array(0), complete: true };
  const reader = res.body.getReader();
  // sized by Content-Length when it is sane, grown up to `max` otherwise (an API answer of unknown length)
  const declared = Number(res.headers.get('content-length'));
  const sane = Number.isSafeInteger(declared) && declared >= 0 && declared <= max;
  // A pooled buffer is not zeroed: only the bytes received are ever handed out (subarray below).
  let out = sane && pooled ? lendChunk(declared) : new Uint8Array(sane ? declared : Math.min(max, 1 << 20));
  let got = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (got + value.byteLength > max) {
        await reader.cancel().catch(() => undefined);
        throw new TensorportError('RemoteProtocolError', `${name}: the server sent more than the ${max} bytes asked for`, { path: name });
      }
      if (got + value.byteLength > out.byteLength) {
        const grown = new Uint8Array(Math.min(max, Math.max(out.byteLength * 2, got + value.byteLength)));
        grown.set(out.subarray(0, got));
        out = grown;
      }
      out.set(value, got);
      got += value.byteLength;
    }
  } catch (e) {
    if (e instanceof TensorportError) throw e;
    // a reset mid-body: keep what arrived
    return { bytes: out.subarray(0, got), complete: false };
  }
  return { bytes: out.subarray(0, got), complete: true };
}

export interface RangeRequest {
  url: string;
  /** Inclusive-exclusive byte range. */
  start: number;
  end: number;
  /** Known pin; null for the probe (which establishes it). */
  pin: Pin | null;
  /** For a probe: a 200 whole body is accepted up to this many bytes. */
  wholeMax?: number;
  /**
   * Read the body into a buffer from the chunk pool (io/recycle.ts): for tensor data that the
   * caller hands on whole and never keeps. Not for anything cached (pages, the probe).
   */
  pooled?: boolean;
  /** The input's name in messages. */
  name: string;
}

/**
 * GETs [start, end) with retries. A short or reset body is resumed from the byte received. Every
 * 206 is checked: exact start and length, no content coding, total and ETag equal to the pin.
 */
export async function getRange(req: RangeRequest, options: HttpOptions, counters: Counters): Promise<RangeAnswer> {
  const retries = options.retries ?? DEFAULTS.retries;
  const parts: Uint8Array[] = [];
  let got = 0;
  let last: Transient | null = null;
  for (let attempt = 0; ; attempt++) {
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
    try {
      const answer = await exchange({ ...req, start: req.start + got }, options, counters);
      if (got === 0) return answer;
      parts.push(answer.body);
      return { ...answer, body: concat(parts, got + answer.body.byteLength) };
    } catch (e) {
      if (!(e instanceof Transient)) throw e;
      if (e.partial && e.partial.byteLength > 0 && req.pin) {
        parts.push(e.partial);
        got += e.partial.byteLength;
      }
      last = e;
      if (attempt >= retries) break;
      const base = Math.min((options.retryDelayMs ?? DEFAULTS.retryDelayMs) * 2 ** attempt, options.maxRetryDelayMs ?? DEFAULTS.maxRetryDelayMs);
      const wait = e.waitMs === null ? base : Math.min(e.waitMs + (options.retryDelayMs ?? DEFAULTS.retryDelayMs), MAX_RETRY_AFTER_MS);
      await sleep(wait, options.signal);
    }
  }
  throw new TensorportError(last!.code, `${last!.message} (after ${retries} ${retries === 1 ? 'retry' : 'retries'})`, { path: req.name });
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason ?? new Error('aborted'));
    }, { once: true });
  });
}

async function exchange(req: RangeRequest, options: HttpOptions, counters: Counters): Promise<RangeAnswer> {
  const { url, start, end, pin, name } = req;
  const headers: Record<string, string> = { ...options.headers, Range: `bytes=${start}-${end - 1}` };
  if (options.token && options.tokenOrigin && originOf(url) === options.tokenOrigin) headers.Authorization = `Bearer ${options.token}`;
  const ifRange = pin?.etag && defaultIfRange(options) ? pin.etag : null;
  if (ifRange) headers['If-Range'] = ifRange;
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctrl.abort();
  }, options.timeoutMs ?? DEFAULTS.timeoutMs);
  const onAbort = (): void => ctrl.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const doFetch = options.fetch ?? fetch;
  counters.requests++;
  try {
    let res: Response;
    try {
      res = await doFetch(url, { headers, signal: ctrl.signal, redirect: 'follow' });
    } catch (e) {
      if (options.signal?.aborted) throw options.signal.reason ?? e;
      if (timedOut) throw new Transient(`${name}: no answer within ${options.timeoutMs ?? DEFAULTS.timeoutMs} ms`, 'RemoteTimeout');
      throw new Transient(`${name}: ${(e as Error).message}${(e as { cause?: { code?: string } }).cause?.code ? ` (${(e as { cause: { code: string } }).cause.code})` : ''}`, 'RemoteUnavailable');
    }
    const status = res.status;
    const finalUrl = res.url || url;
    const etagHeader = res.headers.get('etag');
    if (status === 206) {
      const encoding = res.headers.get('content-encoding');
      if (encoding && encoding.toLowerCase() !== 'identity') return refuse(res, 'RemoteProtocolError', `${name}: a range of a ${encoding}-encoded body`);
      if ((res.headers.get('content-type') ?? '').toLowerCase().startsWith('multipart/')) return refuse(res, 'RemoteProtocolError', `${name}: a multipart answer to a single range`);
      const cr = parseContentRange(res.headers.get('content-range'));
      if (!cr || cr.first === null || cr.last === null) return refuse(res, 'RemoteProtocolError', `${name}: bad Content-Range '${res.headers.get('content-range')}'`);
      if (pin && cr.total !== null && cr.total !== pin.size) return refuse(res, 'RemoteFileChanged', `${name}: the file changed while it was read (size ${pin.size} became ${cr.total})`);
      const etag = strongEtag(etagHeader);
      if (pin?.etag && etag !== null && etag !== pin.etag) return refuse(res, 'RemoteFileChanged', `${name}: the file changed while it was read (ETag ${pin.etag} became ${etag})`);
      const total = cr.total ?? pin?.size ?? null;
      const wantLast = total === null ? end - 1 : Math.min(end, total) - 1;
      if (cr.first !== start || cr.last !== wantLast) return refuse(res, 'RemoteProtocolError', `${name}: asked for bytes ${start}-${end - 1}, got ${cr.first}-${cr.last}`);
      const length = cr.last - cr.first + 1;
      const { bytes, complete } = await readBody(res, length, name, req.pooled === true && pin !== null);
      counters.bytesTransferred += bytes.byteLength;
      if (!complete || bytes.byteLength < length) {
        if (timedOut) throw new Transient(`${name}: no complete answer within ${options.timeoutMs ?? DEFAULTS.timeoutMs} ms`, 'RemoteTimeout', null, bytes);
        throw new Transient(`${name}: the connection ended after ${bytes.byteLength} of ${length} bytes`, 'RemoteUnavailable', null, bytes);
      }
      return { status, total, etag, url: finalUrl, body: bytes };
    }
    if (status === 200) {
      const etag = strongEtag(etagHeader);
      if (pin) {
        // An If-Range that no longer matches, or a size or validator that moved: the file changed.
        const length = Number(res.headers.get('content-length'));
        if ((ifRange && etag !== ifRange) || (pin.etag && etag !== null && etag !== pin.etag) || (Number.isSafeInteger(length) && length !== pin.size)) {
          return refuse(res, 'RemoteFileChanged', `${name}: the file changed while it was read (the server answered the whole ${etag ?? 'new'} body)`);
        }
        return refuse(res, 'RemoteRangeUnsupported', `${name}: the server stopped honouring Range (200 with the whole body)`);
      }
      const declared = res.headers.get('content-length');
      const length = declared === null ? null : Number(declared);
      const max = req.wholeMax ?? 0;
      if (length === null || !Number.isSafeInteger(length) || length > max) {
        return refuse(res, 'RemoteRangeUnsupported', `${name}: the server ignores Range (200 with the whole ${length ?? 'unsized'} body, more than the ${max} bytes read whole); download it first`);
      }
      const { bytes, complete } = await readBody(res, length, name);
      counters.bytesTransferred += bytes.byteLength;
      if (!complete || bytes.byteLength !== length) throw new Transient(`${name}: the connection ended after ${bytes.byteLength} of ${length} bytes`, 'RemoteUnavailable');
      return { status, total: length, etag, url: finalUrl, body: bytes };
    }
    if (status === 416) {
      const cr = parseContentRange(res.headers.get('content-range'));
      await res.body?.cancel().catch(() => undefined);
      if (!pin && cr?.total === 0) return { status, total: 0, etag: strongEtag(etagHeader), url: finalUrl, body: new Uint8Array(0) };
      throw new TensorportError(pin ? 'RemoteFileChanged' : 'RemoteProtocolError', `${name}: bytes ${start}-${end - 1} are past the end (${cr?.total ?? 'unknown'} bytes)${pin ? ': the file changed while it was read' : ''}`, { path: name });
    }
    await res.body?.cancel().catch(() => undefined);
    if (isTransientStatus(status)) {
      throw new Transient(`${name}: HTTP ${status}${status === 429 ? ' (rate limited)' : ''}`, status === 408 ? 'RemoteTimeout' : 'RemoteUnavailable', retryAfterMs(res.headers));
    }
    throw statusError(status, res.headers, name);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

async function refuse(res: Response, code: ErrorCode, message: string): Promise<never> {
  await res.body?.cancel().catch(() => undefined);
  // the message starts with the input's name
  throw new TensorportError(code, message, { path: message.slice(0, message.indexOf(': ')) });
}

/** A small JSON document (the Hub's API answers); refused above `maxBytes`. */
export async function getJson(url: string, name: string, maxBytes: number, options: HttpOptions, counters: Counters): Promise<unknown> {
  const retries = options.retries ?? DEFAULTS.retries;
  for (let attempt = 0; ; attempt++) {
    const headers: Record<string, string> = { ...options.headers, Accept: 'application/json' };
    if (options.token && options.tokenOrigin && originOf(url) === options.tokenOrigin) headers.Authorization = `Bearer ${options.token}`;
    counters.requests++;
    let res: Response;
    try {
      res = await (options.fetch ?? fetch)(url, { headers, signal: AbortSignal.any([AbortSignal.timeout(options.timeoutMs ?? DEFAULTS.timeoutMs), ...(options.signal ? [options.signal] : [])]) });
    } catch (e) {
      if (options.signal?.aborted) throw options.signal.reason ?? e;
      if (attempt >= retries) throw new TensorportError('RemoteUnavailable', `${name}: ${(e as Error).message}`, { path: name });
      await sleep(Math.min((options.retryDelayMs ?? DEFAULTS.retryDelayMs) * 2 ** attempt, options.maxRetryDelayMs ?? DEFAULTS.maxRetryDelayMs), options.signal);
      continue;
    }
    if (res.ok) {
      const { bytes, complete } = await readBody(res, maxBytes, name);
      counters.bytesTransferred += bytes.byteLength;
      if (!complete) throw new TensorportError('RemoteUnavailable', `${name}: the connection ended early`, { path: name });
      try {
        return JSON.parse(new TextDecoder().decode(bytes));
      } catch {
        throw new TensorportError('RemoteProtocolError', `${name}: the answer is not JSON`, { path: name });
      }
    }
    await res.body?.cancel().catch(() => undefined);
    if (isTransientStatus(res.status) && attempt < retries) {
      const wait = retryAfterMs(res.headers);
      await sleep(wait === null ? Math.min((options.retryDelayMs ?? DEFAULTS.retryDelayMs) * 2 ** attempt, options.maxRetryDelayMs ?? DEFAULTS.maxRetryDelayMs) : Math.min(wait + (options.retryDelayMs ?? DEFAULTS.retryDelayMs), MAX_RETRY_AFTER_MS), options.signal);
      continue;
    }
    if (isTransientStatus(res.status)) throw new TensorportError('RemoteUnavailable', `${name}: HTTP ${res.status} (after ${retries} retries)`, { path: name });
    throw statusError(res.status, res.headers, name);
  }
}
