import { relative, sep } from 'node:path';
import { allowedGlobals, type TreeEntry } from '@tensorport/lib/node';

/**
 * `tensorport scan --format sarif`: SARIF 2.1.0 (OASIS) for code-scanning dashboards. One result
 * per disallowed global per file, one per other finding, one per file that could not be read;
 * the file is the result's artifact location, relative to the scanned directory (`%SRCROOT%`).
 * Rule ids are stable: CI suppressions and dashboards key on them.
 */
export const SARIF_RULES = [
  { id: 'TP1001', name: 'PickleDisallowedGlobal', text: 'A pickle references a global outside the allowlist: loading it with torch.load(weights_only=False) or pickle.load imports and may call it.' },
  { id: 'TP1002', name: 'PickleFinding', text: 'A pickle or its container is malformed, ambiguous between loaders, over a limit, or TorchScript: it cannot be vouched for.' },
  { id: 'TP1003', name: 'NotAPickle', text: 'Bytes of no format tensorport knows that do not parse as a pickle: nothing to vouch for.' },
  { id: 'TP1004', name: 'Unreadable', text: 'The file could not be read, so it was not scanned.' },
] as const;

type RuleName = (typeof SARIF_RULES)[number]['name'];
const RULE_INDEX = new Map<RuleName, number>(SARIF_RULES.map((r, i) => [r.name, i]));

interface Result {
  ruleId: string;
  ruleIndex: number;
  level: 'error' | 'warning';
  message: { text: string };
  locations: Array<{ physicalLocation: { artifactLocation: { uri: string; uriBaseId: string; index: number }; region?: { byteOffset: number } } }>;
}

export function toSarif(root: string, entries: readonly TreeEntry[], version: string): object {
  const allowed = new Set(allowedGlobals());
  const artifacts = entries.map((e) => ({ location: { uri: relativeUri(root, e.path), uriBaseId: '%SRCROOT%' } }));
  const results: Result[] = [];
  entries.forEach((e, index) => {
    const at = (offset?: number) => [{
      physicalLocation: {
        artifactLocation: { uri: artifacts[index]!.location.uri, uriBaseId: '%SRCROOT%', index },
        ...(offset === undefined ? {} : { region: { byteOffset: offset } }),
      },
    }];
    const add = (rule: RuleName, level: Result['level'], text: string, offset?: number) =>
      results.push({ ruleId: SARIF_RULES[RULE_INDEX.get(rule)!]!.id, ruleIndex: RULE_INDEX.get(rule)!, level, message: { text }, locations: at(offset) });
    if (e.error) {
      add('Unreadable', 'warning', `could not read: ${e.error.message}`);
      return;
    }
    const r = e.result!;
    for (const g of r.globals) if (!allowed.has(g)) add('PickleDisallowedGlobal', 'error', `global ${g} is not on the allowlist`);
    if (r.verdict === 'not-a-pickle') add('NotAPickle', 'warning', r.findings[0]?.message ?? 'not a pickle');
    else {
      for (const f of r.findings) {
        if (f.code === 'PickleDisallowedGlobal') continue; // one result per global, above
        add('PickleFinding', 'error', `${f.code}: ${f.message}`, typeof f.offset === 'number' ? f.offset : undefined);
      }
    }
  });
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [{
      tool: {
        driver: {
          name: 'tensorport',
          version,
          informationUri: 'https://github.com/tensorport/tensorport',
          rules: SARIF_RULES.map((r) => ({ id: r.id, name: r.name, shortDescription: { text: r.text }, defaultConfiguration: { level: r.name === 'Unreadable' || r.name === 'NotAPickle' ? 'warning' : 'error' } })),
        },
      },
      originalUriBaseIds: { '%SRCROOT%': { uri: pathToFileUri(root) } },
      artifacts,
      results,
      invocations: [{ executionSuccessful: entries.every((e) => !e.error) }],
    }],
  };
}

function pathToFileUri(p: string): string {
  const abs = p.startsWith('/') ? p : `${process.cwd()}/${p}`;
  return `file://${abs.split('/').map(encodeURIComponent).join('/')}${abs.endsWith('/') ? '' : '/'}`;
}

/** A path inside the scanned directory, with `/` separators: what SARIF's artifact URI holds. */
export function relativeUri(root: string, path: string): string {
  const rel = relative(root, path) || path;
  return rel.split(sep).map(encodeURIComponent).join('/');
}
