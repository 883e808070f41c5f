import { TensorportError } from '../errors.ts';

/** A file or a repo on a Hugging Face Hub endpoint (remote.md §1). */
export interface HubAddress {
  /** '' for models, else 'datasets' or 'spaces' (the URL prefix). */
  type: '' | 'datasets' | 'spaces';
  /** `namespace/name`. */
  repo: string;
  /** As given; 'main' by default. */
  revision: string;
  /** Path inside the repo; '' for a bare repo. */
  path: string;
}

export const DEFAULT_ENDPOINT = 'https://huggingface.co';
const TYPES = new Set(['datasets', 'spaces']);
const NAME = /^(?![-.])[A-Za-z0-9_.-]{1,96}(?<![-.])$/;
/** Branch names with '/' must be written %2F, except these (huggingface_hub's special refs). */
const SPECIAL_REF = /^(refs\/(?:pr\/\d+|convert\/[A-Za-z0-9_.-]+))(?:\/|$)/;
const COMMIT = /^[0-9a-f]{40}$/;

export function isCommit(revision: string): boolean {
  return COMMIT.test(revision);
}

export function isRemoteInput(input: string): boolean {
  return /^(https?|hf):\/\//i.test(input);
}

function invalid(input: string, why: string): TensorportError {
  return new TensorportError('RemoteInvalidAddress', `${input}: ${why}`, { path: input });
}

function checkName(input: string, ns: string | undefined, name: string | undefined): string {
  if (!ns || !name) throw invalid(input, 'a Hub repo is <namespace>/<name> (hf://gpt2 style ids without a namespace are not accepted)');
  for (const part of [ns, name]) {
    if (!NAME.test(part) || part.includes('--') || part.includes('..') || part.endsWith('.git')) throw invalid(input, `'${part}' is not a valid repo name part`);
  }
  return `${ns}/${name}`;
}

function checkPath(input: string, path: string): string {
  if (path.startsWith('/') || path.includes('//') || path.split('/').some((s) => s === '..' || s === '.')) throw invalid(input, `bad path '${path}' in the repo`);
  return path;
}

/** `hf://[datasets/|spaces/|models/]<ns>/<name>[@<rev>][/<path>]`. */
export function parseHfUri(input: string): HubAddress {
  let rest = input.replace(/^hf:\/\//i, '');
  let type: HubAddress['type'] = '';
  const first = rest.split('/')[0]!;
  if (TYPES.has(first)) {
    type = first as HubAddress['type'];
    rest = rest.slice(first.length + 1);
  } else if (first === 'models') rest = rest.slice(first.length + 1);
  else if (first === 'dataset' || first === 'space' || first === 'model') throw invalid(input, `the repo type prefix is plural: '${first}s/'`);
  const [ns, nameRev, ...tail] = rest.split('/');
  let name = nameRev;
  let revision = 'main';
  let path = tail.join('/');
  const at = nameRev?.indexOf('@') ?? -1;
  if (nameRev !== undefined && at >= 0) {
    name = nameRev.slice(0, at);
    const afterAt = [nameRev.slice(at + 1), ...tail].join('/');
    const special = SPECIAL_REF.exec(afterAt);
    if (special) {
      revision = special[1]!;
      path = afterAt.slice(revision.length + 1);
    } else {
      const slash = afterAt.indexOf('/');
      revision = slash < 0 ? afterAt : afterAt.slice(0, slash);
      path = slash < 0 ? '' : afterAt.slice(slash + 1);
      try {
        revision = decodeURIComponent(revision);
      } catch {
        throw invalid(input, `bad revision '${revision}'`);
      }
    }
    if (revision === '') throw invalid(input, 'empty revision after @');
  }
  path = path.replace(/\/$/, '');
  return { type, repo: checkName(input, ns, name), revision, path: checkPath(input, path) };
}

/**
 * A web URL on the endpoint (or huggingface.co / hf.co) for the routes resolve, blob, raw: the Hub
 * file it names; null for any other URL (a plain byte source). `raw` of an LFS file would be its
 * pointer, so it is read through resolve like blob.
 */
export function parseHubUrl(input: string, endpoint: string): HubAddress | null {
  let u: URL;
  let e: URL;
  try {
    u = new URL(input);
    e = new URL(endpoint);
  } catch {
    return null;
  }
  const hosts = new Set(['huggingface.co', 'hf.co', e.host]);
  if (!hosts.has(u.host)) return null;
  let pathname = u.pathname;
  const prefix = u.host === e.host ? e.pathname.replace(/\/$/, '') : '';
  if (prefix && pathname.startsWith(`${prefix}/`)) pathname = pathname.slice(prefix.length);
  const segs = pathname.split('/').slice(1);
  let type: HubAddress['type'] = '';
  if (TYPES.has(segs[0]!)) type = segs.shift() as HubAddress['type'];
  const [ns, name, route, rev, ...rest] = segs;
  if (!route || !['resolve', 'blob', 'raw'].includes(route) || rev === undefined || rest.length === 0) return null;
  let revision: string;
  let path: string;
  try {
    revision = decodeURIComponent(rev);
    path = rest.map(decodeURIComponent).join('/');
  } catch {
    throw invalid(input, 'bad percent-encoding');
  }
  return { type, repo: checkName(input, ns, name), revision, path: checkPath(input, path) };
}

/** `{endpoint}/{type/}{repo}/resolve/{rev}/{path}`: the revision encoded whole, the path with '/' kept (huggingface_hub's encoding). */
export function resolveUrl(endpoint: string, a: HubAddress, path: string, revision = a.revision): string {
  const rev = SPECIAL_REF.test(revision) ? revision.split('/').map(encodeURIComponent).join('%2F') : encodeURIComponent(revision);
  return `${endpoint.replace(/\/+$/, '')}/${a.type ? `${a.type}/` : ''}${a.repo}/resolve/${rev}/${path.split('/').map(encodeURIComponent).join('/')}`;
}

/** `{endpoint}/api/{models|datasets|spaces}/{repo}/revision/{rev}`: the commit and the file list in one answer. */
export function revisionUrl(endpoint: string, a: HubAddress): string {
  return `${endpoint.replace(/\/+$/, '')}/api/${a.type || 'models'}/${a.repo}/revision/${encodeURIComponent(a.revision)}`;
}

/** How a Hub file is named in messages. */
export function hubName(a: HubAddress, path: string, revision = a.revision): string {
  return `hf://${a.type ? `${a.type}/` : ''}${a.repo}${revision === 'main' ? '' : `@${revision.includes('/') && !SPECIAL_REF.test(revision) ? encodeURIComponent(revision) : revision}`}${path ? `/${path}` : ''}`;
}

/**
 * The weights of a bare repo, in the order transformers and huggingface_hub look for them
 * (remote.md §1.3): a single safetensors file, its index, other safetensors at the root, then
 * PyTorch's names, then the other formats tensorport reads. Null when none is there.
 */
export function chooseWeights(files: readonly string[]): string | null {
  const root = files.filter((f) => !f.includes('/'));
  const has = (f: string): boolean => root.includes(f);
  for (const f of ['model.safetensors', 'model.safetensors.index.json']) if (has(f)) return f;
  const byEnd = (suffix: string): string | undefined => root.filter((f) => f.endsWith(suffix)).sort()[0];
  const other = byEnd('.safetensors.index.json') ?? root.filter((f) => f.endsWith('.safetensors') && !/-\d{5,6}-of-\d{5,6}\.safetensors$/.test(f)).sort()[0];
  if (other) return other;
  for (const f of ['pytorch_model.bin', 'pytorch_model.bin.index.json']) if (has(f)) return f;
  return byEnd('.bin.index.json') ?? byEnd('.npz') ?? byEnd('.pt') ?? byEnd('.pth') ?? byEnd('.gguf') ?? null;
}
