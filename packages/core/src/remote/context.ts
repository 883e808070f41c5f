import { TensorportError } from '../errors.ts';
import { FolderContext } from '../format/context.ts';
import type { Folder } from '../format/types.ts';
import type { ByteSource } from '../io/source.ts';
import type { DeflateCodec } from '../zip/codec.ts';
import { displayUrl, getJson, type Counters } from './http.ts';
import { HttpSource, type HttpSourceOptions, type TransferStats } from './http-source.ts';
import {
  chooseWeights, DEFAULT_ENDPOINT, hubName, isCommit, parseHfUri, parseHubUrl, resolveUrl, revisionUrl, type HubAddress,
} from './hub.ts';

export interface RemoteOptions extends HttpSourceOptions {
  /** The Hub endpoint (HF_ENDPOINT); the token goes to its origin only. Default https://huggingface.co. */
  endpoint?: string;
  codec?: DeflateCodec;
  /** Called once when the context closes, with what it cost. */
  onTransfer?: (input: string, stats: TransferStats) => void;
}

/** HF_ENDPOINT and HF_TOKEN (or the legacy HUGGING_FACE_HUB_TOKEN) from an environment record. */
export function remoteOptionsFromEnv(env: Record<string, string | undefined>): RemoteOptions {
  const token = env.HF_TOKEN || env.HUGGING_FACE_HUB_TOKEN;
  return { ...(env.HF_ENDPOINT ? { endpoint: env.HF_ENDPOINT } : {}), ...(token && env.HF_HUB_DISABLE_IMPLICIT_TOKEN !== '1' ? { token } : {}) };
}

/** The answer of `/api/models/{repo}/revision/{rev}` we use: the commit and the file names. */
const MAX_API_BYTES = 64 * 1024 * 1024;
/** Index shards are refused above this many files in a folder listing (huggingface.js refuses > 10,000 shards). */
const MAX_FILES = 1_000_000;

/** Files of one remote folder: named URLs, each opened (probed) once. */
export class RemoteFolder implements Folder {
  private readonly sources = new Map<string, Promise<HttpSource>>();
  private readonly opened: HttpSource[] = [];

  constructor(
    readonly name: string,
    /** name → URL; null when the folder cannot be listed (a plain HTTP directory). */
    private readonly files: ReadonlyMap<string, string> | null,
    private readonly urlOf: (name: string) => string,
    private readonly nameOf: (name: string) => string,
    private readonly options: RemoteOptions,
    readonly api: Counters = { requests: 0, bytesTransferred: 0 },
  ) {}

  async list(): Promise<readonly string[]> {
    return this.files ? [...this.files.keys()].sort() : [];
  }

  async size(name: string): Promise<number | null> {
    if (this.files && !this.files.has(name)) return null;
    try {
      return (await this.source(name)).size;
    } catch (e) {
      if (e instanceof TensorportError && e.code === 'RemoteNotFound') return null;
      throw e;
    }
  }

  open(name: string): Promise<ByteSource> {
    return this.source(name);
  }

  path(name: string): string {
    return this.nameOf(name);
  }

  private source(name: string): Promise<HttpSource> {
    let s = this.sources.get(name);
    if (!s) {
      const url = this.files?.get(name) ?? this.urlOf(name);
      s = HttpSource.open(url, this.nameOf(name), this.options).then((src) => {
        this.opened.push(src);
        return src;
      });
      this.sources.set(name, s);
      s.catch(() => this.sources.delete(name));
    }
    return s;
  }

  transfer(): TransferStats {
    const t = { size: 0, requests: this.api.requests, bytesTransferred: this.api.bytesTransferred };
    for (const s of this.opened) {
      const x = s.stats();
      t.size += x.size;
      t.requests += x.requests;
      t.bytesTransferred += x.bytesTransferred;
    }
    return t;
  }
}

/** A context over remote files: every pipeline command works through it. */
export class RemoteContext extends FolderContext {
  constructor(
    readonly remote: RemoteFolder,
    entry: string | null,
    name: string,
    private readonly options: RemoteOptions,
  ) {
    super(remote, entry, { name, ...(options.codec ? { codec: options.codec } : {}) });
  }

  /** Requests made and bytes received so far (API calls included), against the files' sizes. */
  transfer(): TransferStats {
    return this.remote.transfer();
  }

  override async close(): Promise<void> {
    const stats = this.transfer();
    await super.close();
    this.options.onTransfer?.(this.name, stats);
  }
}

/**
 * The context of a URL or `hf://` address. A plain URL is its file among its siblings (shards
 * next to an index); a Hub address is resolved once through the revision API (the commit, so
 * every file comes from one commit, and the file list, so a bare repo finds its weights).
 */
export async function openRemote(input: string, options: RemoteOptions = {}): Promise<RemoteContext> {
  const endpoint = (options.endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '');
  let tokenOrigin: string;
  try {
    tokenOrigin = new URL(endpoint).origin;
  } catch {
    throw new TensorportError('RemoteInvalidAddress', `HF_ENDPOINT ${endpoint} is not a URL`);
  }
  const http: RemoteOptions = { ...options, tokenOrigin };
  if (/^hf:\/\//i.test(input)) return openHub(input, parseHfUri(input), endpoint, http);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new TensorportError('RemoteInvalidAddress', `${displayUrl(input)} is not a URL`, { path: input });
  }
  if (url.username || url.password) throw new TensorportError('RemoteInvalidAddress', `${displayUrl(input)}: credentials in a URL are not sent; use HF_TOKEN for the Hub`, { path: displayUrl(input) });
  const hub = parseHubUrl(input, endpoint);
  if (hub) return openHub(input, hub, endpoint, http);
  if (url.pathname.endsWith('/')) {
    throw new TensorportError('RemoteInvalidAddress', `${displayUrl(input)}: a plain HTTP folder cannot be listed; name a file (an index names its shards)`, { path: displayUrl(input) });
  }
  const slash = url.pathname.lastIndexOf('/');
  const base = `${url.origin}${url.pathname.slice(0, slash + 1)}`;
  const entry = decodeURIComponent(url.pathname.slice(slash + 1));
  const files = new Map([[entry, url.href]]);
  const folder = new RemoteFolder(
    displayUrl(base),
    null,
    (n) => (files.get(n) ?? `${base}${encodeURIComponent(n)}`),
    (n) => (n === entry ? input : `${displayUrl(base)}${n}`),
    http,
  );
  return new RemoteContext(folder, entry, input, http);
}

async function openHub(input: string, addr: HubAddress, endpoint: string, options: RemoteOptions): Promise<RemoteContext> {
  const api: Counters = { requests: 0, bytesTransferred: 0 };
  const label = hubName(addr, '');
  const info = (await getJson(revisionUrl(endpoint, addr), label, MAX_API_BYTES, options, api)) as { sha?: unknown; siblings?: unknown };
  const commit = typeof info?.sha === 'string' && isCommit(info.sha) ? info.sha : isCommit(addr.revision) ? addr.revision : null;
  if (!Array.isArray(info?.siblings)) throw new TensorportError('RemoteProtocolError', `${label}: the Hub's revision answer has no file list`, { path: label });
  const all = (info.siblings as { rfilename?: unknown }[]).map((s) => s?.rfilename).filter((f): f is string => typeof f === 'string');
  if (all.length > MAX_FILES) throw new TensorportError('RemoteProtocolError', `${label}: more than ${MAX_FILES} files`, { path: label });
  let dir = '';
  let entry: string | null;
  if (addr.path === '' || (!all.includes(addr.path) && all.some((f) => f.startsWith(`${addr.path}/`)))) {
    dir = addr.path;
    const inDir = all.filter((f) => (dir ? f.startsWith(`${dir}/`) : true)).map((f) => (dir ? f.slice(dir.length + 1) : f));
    entry = chooseWeights(inDir);
    if (entry === null) throw new TensorportError('RemoteNotFound', `${hubName(addr, dir)}: no weight files (model.safetensors, an index, pytorch_model.bin, .npz, .pt, .gguf)`, { path: hubName(addr, dir) });
  } else {
    if (!all.includes(addr.path)) throw new TensorportError('RemoteNotFound', `${hubName(addr, addr.path)}: no such file in the repo`, { path: hubName(addr, addr.path) });
    const slash = addr.path.lastIndexOf('/');
    dir = slash < 0 ? '' : addr.path.slice(0, slash);
    entry = addr.path.slice(slash + 1);
  }
  const full = (n: string): string => (dir ? `${dir}/${n}` : n);
  const files = new Map<string, string>();
  for (const f of all) {
    const rel = dir ? (f.startsWith(`${dir}/`) ? f.slice(dir.length + 1) : null) : f;
    if (rel !== null && !rel.includes('/')) files.set(rel, resolveUrl(endpoint, addr, full(rel), commit ?? addr.revision));
  }
  const folder = new RemoteFolder(hubName(addr, dir), files, (n) => resolveUrl(endpoint, addr, full(n), commit ?? addr.revision), (n) => hubName(addr, full(n)), options, api);
  // a bare repo (or folder) is named by the file chosen in it, so messages say which one
  return new RemoteContext(folder, entry, dir === addr.path && !all.includes(addr.path) ? hubName(addr, full(entry)) : input, options);
}
