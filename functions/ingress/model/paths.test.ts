import { describe, expect, it } from 'vitest';
import type { HttpIngressPath } from '../../../shared/k8s/ingress-types.ts';
import { pathPatterns, sortPaths } from './paths.ts';
import { path } from './testing/builders.ts';

describe('sortPaths', () => {
  it('puts Exact first (manifest order), then Prefix longest first (ties in order), then the rest (in order)', () => {
    const paths: HttpIngressPath[] = [
      path('/impl-a', 'ImplementationSpecific'),
      path('/a', 'Prefix'),
      path('/exact-1', 'Exact'),
      path('/longer', 'Prefix'),
      path('/unset', undefined),
      path('/b', 'Prefix'),
      path('/exact-2', 'Exact'),
    ];
    expect(sortPaths(paths).map((p) => `${p.index}:${p.path.path}`)).toEqual([
      '2:/exact-1',
      '6:/exact-2',
      '3:/longer',
      '1:/a',
      '5:/b',
      '0:/impl-a',
      '4:/unset',
    ]);
  });
});

describe('pathPatterns', () => {
  it.each([
    ['/foo', 'Exact', false, ['/foo'], []],
    ['/', 'Prefix', false, ['/*'], []],
    ['/foo', 'Prefix', false, ['/foo', '/foo/*'], []],
    ['/foo/', 'Prefix', false, ['/foo', '/foo/*'], []],
    ['/img/*.png', 'ImplementationSpecific', false, ['/img/*.png'], []],
    ['/img/*.png', undefined, false, ['/img/*.png'], []],
    ['/api/v[0-9]+/.*', 'ImplementationSpecific', true, [], ['api/v[0-9]+/.*']],
    ['/foo', 'Prefix', true, ['/foo', '/foo/*'], []],
    ['/foo', 'Exact', true, ['/foo'], []],
  ] as const)('%s (%s, regex %s) -> %j %j', (value, type, regex, values, regexValues) => {
    expect(pathPatterns(value, type, regex)).toEqual({ values, regexValues });
  });

  it.each([
    ['/foo*', 'Exact'],
    ['/fo?', 'Exact'],
    ['/foo/*', 'Prefix'],
  ] as const)('refuses wildcards in %s (%s)', (value, type) => {
    expect(pathPatterns(value, type, false)).toEqual({ problem: expect.stringContaining('wildcards') });
  });
});
