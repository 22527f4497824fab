import { describe, expect, it } from 'vitest';
import { parseConditions, ruleConditions } from './conditions.ts';
import { JsonShapeError } from './json.ts';

describe('parseConditions', () => {
  it('reads every field, keys in any case', () => {
    const raw = JSON.stringify([
      { Field: 'http-header', HttpHeaderConfig: { HttpHeaderName: 'X-Env', Values: ['canary'] } },
      { field: 'http-request-method', httpRequestMethodConfig: { values: ['GET', 'HEAD'] } },
      { field: 'query-string', queryStringConfig: { values: [{ key: 'v', value: '2' }, { Value: 'x' }] } },
      { field: 'source-ip', SourceIpConfig: { values: ['10.0.0.0/8'] } },
      { field: 'host-header', hostHeaderConfig: { values: ['b.example.com'] } },
      { field: 'path-pattern', pathPatternConfig: { regexValues: ['^/api'] } },
    ]);
    expect(parseConditions(raw)).toEqual([
      { field: 'http-header', headerName: 'X-Env', values: ['canary'], regexValues: [] },
      { field: 'http-request-method', values: ['GET', 'HEAD'] },
      { field: 'query-string', values: [{ key: 'v', value: '2' }, { value: 'x' }] },
      { field: 'source-ip', values: ['10.0.0.0/8'] },
      { field: 'host-header', values: ['b.example.com'], regexValues: [] },
      { field: 'path-pattern', values: [], regexValues: ['^/api'] },
    ]);
  });

  it.each([
    ['bad JSON', '[{', /invalid JSON/],
    ['not a list', '{"field":"source-ip"}', /expected a list/],
    ['no field', '[{"sourceIpConfig":{"values":["1.2.3.4/32"]}}]', /field is required/],
    ['an unknown field', '[{"field":"cookie","cookieConfig":{}}]', /unknown condition field "cookie"/],
    ['a missing config', '[{"field":"source-ip"}]', /missing sourceIPConfig/],
    [
      'empty values',
      '[{"field":"http-request-method","httpRequestMethodConfig":{"values":[]}}]',
      /values cannot be empty/,
    ],
    [
      'an empty query value',
      '[{"field":"query-string","queryStringConfig":{"values":[{"key":"a"}]}}]',
      /value cannot be empty/,
    ],
  ])('refuses %s', (_, raw, message) => {
    expect(() => parseConditions(raw)).toThrow(JsonShapeError);
    expect(() => parseConditions(raw)).toThrow(message);
  });
});

describe('ruleConditions', () => {
  it('puts the annotation conditions first, then host-header, then path-pattern', () => {
    const extra = parseConditions(
      JSON.stringify([
        { field: 'host-header', hostHeaderConfig: { values: ['b.example.com'] } },
        { field: 'source-ip', sourceIpConfig: { values: ['10.0.0.0/8'] } },
        { field: 'path-pattern', pathPatternConfig: { values: ['/extra'] } },
        { field: 'http-header', httpHeaderConfig: { httpHeaderName: 'X-A', values: ['1'] } },
      ]),
    );
    expect(ruleConditions({ host: 'a.example.com', pathValues: ['/p', '/p/*'], pathRegexValues: [], extra })).toEqual({
      conditions: [
        { field: 'source-ip', values: ['10.0.0.0/8'] },
        { field: 'http-header', headerName: 'X-A', values: ['1'] },
        { field: 'host-header', values: ['a.example.com', 'b.example.com'] },
        { field: 'path-pattern', values: ['/p', '/p/*', '/extra'] },
      ],
    });
  });

  it('matches every path when there is no host and no path', () => {
    expect(ruleConditions({ pathValues: [], pathRegexValues: [], extra: [] })).toEqual({
      conditions: [{ field: 'path-pattern', values: ['/*'] }],
    });
  });

  it('does not add /* when the annotation gives another condition', () => {
    const extra = parseConditions('[{"field":"http-request-method","httpRequestMethodConfig":{"values":["POST"]}}]');
    expect(ruleConditions({ pathValues: [], pathRegexValues: [], extra })).toEqual({
      conditions: [{ field: 'http-request-method', values: ['POST'] }],
    });
  });

  it('regular expressions are a problem until the port sends RegexValues (the member is kept, never sent half-made)', () => {
    expect(ruleConditions({ host: 'a.example.com', pathValues: [], pathRegexValues: ['api/.*'], extra: [] })).toEqual({
      problem: expect.stringContaining('regular expression conditions'),
    });
    const headerRegex = parseConditions(
      '[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":"x-a","regexValues":["^b"]}}]',
    );
    expect(ruleConditions({ pathValues: ['/a'], pathRegexValues: [], extra: headerRegex })).toEqual({
      problem: expect.stringContaining('not supported'),
    });
  });

  it('refuses globs and regular expressions in one host or path condition', () => {
    const hostRegex = parseConditions('[{"field":"host-header","hostHeaderConfig":{"regexValues":["^a"]}}]');
    expect(ruleConditions({ host: 'a.example.com', pathValues: [], pathRegexValues: [], extra: hostRegex })).toEqual({
      problem: expect.stringContaining('host condition'),
    });
    expect(ruleConditions({ pathValues: ['/a'], pathRegexValues: ['b'], extra: [] })).toEqual({
      problem: expect.stringContaining('path condition'),
    });
  });
});
