import type { HttpIngressPath } from '../../../shared/k8s/ingress-types.ts';

/**
 * An Ingress path as listener rule conditions, as the AWS Load Balancer Controller writes them: the order of the
 * paths of one `spec.rules[]` entry (Exact, then Prefix longest first, then ImplementationSpecific) and the
 * `path-pattern` values of each path type. ALB path patterns are case-sensitive globs (`*`, `?`) on the path;
 * regular expressions go in `RegexValues` instead.
 * https://kubernetes.io/docs/concepts/services-networking/ingress/#path-types
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/rule-condition-types.html#path-conditions
 */

/** A path with where it was written (`spec.rules[i].http.paths[j]`), so problems point at it. */
export interface IndexedPath {
  path: HttpIngressPath;
  index: number;
}

/**
 * Exact paths in manifest order, then Prefix paths with the longest path string first (ties in manifest order),
 * then ImplementationSpecific and unset ones in manifest order. Per `spec.rules[]` entry, never across entries.
 */
export function sortPaths(paths: readonly HttpIngressPath[]): IndexedPath[] {
  const indexed = paths.map((path, index) => ({ path, index }));
  const exact = indexed.filter((p) => p.path.pathType === 'Exact');
  // Array.prototype.sort is stable, so equal lengths keep manifest order.
  const prefix = indexed
    .filter((p) => p.path.pathType === 'Prefix')
    .sort((a, b) => (b.path.path ?? '').length - (a.path.path ?? '').length);
  const rest = indexed.filter((p) => p.path.pathType !== 'Exact' && p.path.pathType !== 'Prefix');
  return [...exact, ...prefix, ...rest];
}

export type PathPatterns = { values: string[]; regexValues: string[] } | { problem: string };

/**
 * The path-pattern values of one path: Exact as it is; Prefix `/` as `/*`, any other Prefix (one trailing slash
 * trimmed) as itself and itself followed by `/*`; ImplementationSpecific as it is, or, with `use-regex-path-match`,
 * without its leading `/` as a regular expression. Exact and Prefix paths with `*` or `?` are refused: they would
 * be wildcards to ALB and literal characters to Kubernetes.
 */
export function pathPatterns(path: string, pathType: HttpIngressPath['pathType'], useRegex: boolean): PathPatterns {
  switch (pathType) {
    case 'Exact':
      if (/[*?]/.test(path)) return { problem: `exact path shouldn't contain wildcards: ${path}` };
      return { values: [path], regexValues: [] };
    case 'Prefix': {
      if (path === '/') return { values: ['/*'], regexValues: [] };
      if (/[*?]/.test(path)) return { problem: `prefix path shouldn't contain wildcards: ${path}` };
      const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
      return { values: [trimmed, `${trimmed}/*`], regexValues: [] };
    }
    case undefined:
    case 'ImplementationSpecific':
      return useRegex ? { values: [], regexValues: [path.slice(1)] } : { values: [path], regexValues: [] };
    default:
      return { problem: `unknown pathType ${String(pathType)} for path ${path}` };
  }
}
