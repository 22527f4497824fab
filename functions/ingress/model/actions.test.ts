import { describe, expect, it } from 'vitest';
import { normalizePort, parseAction } from './actions.ts';
import { JsonShapeError } from './json.ts';

describe('parseAction', () => {
  it('reads a fixed response', () => {
    expect(
      parseAction(
        '{"type":"fixed-response","fixedResponseConfig":{"contentType":"text/plain","statusCode":"503","messageBody":"down"}}',
      ),
    ).toEqual({ type: 'fixed-response', statusCode: '503', contentType: 'text/plain', messageBody: 'down' });
    expect(parseAction('{"type":"fixed-response","fixedResponseConfig":{"statusCode":"404"}}')).toEqual({
      type: 'fixed-response',
      statusCode: '404',
    });
  });

  it('states every redirect component, keeping the request components not given (PascalCase keys)', () => {
    expect(
      parseAction('{"Type":"redirect","RedirectConfig":{"Protocol":"HTTPS","Port":"443","StatusCode":"HTTP_301"}}'),
    ).toEqual({
      type: 'redirect',
      statusCode: 'HTTP_301',
      protocol: 'HTTPS',
      port: '443',
      host: '#{host}',
      path: '/#{path}',
      query: '#{query}',
    });
  });

  it('reads the simplified forward forms as one group of weight 1, stickiness off', () => {
    expect(parseAction('{"type":"forward","targetGroupARN":"arn:tg/a"}')).toEqual({
      type: 'forward',
      targets: [{ target: { arn: 'arn:tg/a' }, weight: 1 }],
      stickiness: { enabled: false },
    });
    expect(parseAction('{"type":"forward","TargetGroupName":"legacy-tg"}')).toEqual({
      type: 'forward',
      targets: [{ target: { name: 'legacy-tg' }, weight: 1 }],
      stickiness: { enabled: false },
    });
  });

  it('reads weighted forwards to Services, ARNs and names, with stickiness', () => {
    const raw = JSON.stringify({
      Type: 'forward',
      ForwardConfig: {
        TargetGroups: [
          { ServiceName: 'blue', ServicePort: '80', Weight: 90 },
          { serviceName: 'green', servicePort: 'http', weight: 10 },
          { targetGroupARN: 'arn:tg/x', weight: 0 },
          { targetGroupName: 'other', weight: 5 },
        ],
        TargetGroupStickinessConfig: { Enabled: true, DurationSeconds: 200 },
      },
    });
    expect(parseAction(raw)).toEqual({
      type: 'forward',
      targets: [
        { target: { service: { name: 'blue', port: 80 } }, weight: 90 },
        { target: { service: { name: 'green', port: 'http' } }, weight: 10 },
        { target: { arn: 'arn:tg/x' }, weight: 0 },
        { target: { name: 'other' }, weight: 5 },
      ],
      stickiness: { enabled: true, durationSeconds: 200 },
    });
  });

  it('gives a single weighted group weight 1 when none is given', () => {
    const raw = '{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"a","servicePort":80}]}}';
    expect(parseAction(raw)).toMatchObject({ targets: [{ weight: 1 }], stickiness: { enabled: false } });
  });

  const tg = (extra: object) => JSON.stringify({ type: 'forward', forwardConfig: { targetGroups: [extra] } });
  const many = (n: number) =>
    JSON.stringify({
      type: 'forward',
      forwardConfig: { targetGroups: Array.from({ length: n }, (_, i) => ({ targetGroupARN: `arn:${i}`, weight: 1 })) },
    });
  it.each([
    ['bad JSON', '{"type":', /invalid JSON/],
    ['no type', '{}', /type is required/],
    ['an unknown type', '{"type":"authenticate-oidc"}', /unknown action type "authenticate-oidc"/],
    ['a fixed response without config', '{"type":"fixed-response"}', /missing fixedResponseConfig/],
    ['a fixed response without status', '{"type":"fixed-response","fixedResponseConfig":{}}', /statusCode is required/],
    [
      'a fixed response status out of range',
      '{"type":"fixed-response","fixedResponseConfig":{"statusCode":"302"}}',
      /2XX/,
    ],
    ['a redirect without config', '{"type":"redirect"}', /missing redirectConfig/],
    ['a redirect without status', '{"type":"redirect","redirectConfig":{"host":"x"}}', /statusCode is required/],
    [
      'a redirect with a bad status',
      '{"type":"redirect","redirectConfig":{"statusCode":"301"}}',
      /HTTP_301 or HTTP_302/,
    ],
    ['a forward with nothing', '{"type":"forward"}', /precisely one of/],
    ['a forward with two forms', '{"type":"forward","targetGroupARN":"a","targetGroupName":"b"}', /precisely one of/],
    ['an empty forward', '{"type":"forward","forwardConfig":{"targetGroups":[]}}', /cannot be empty/],
    ['a group with two names', tg({ targetGroupARN: 'a', serviceName: 'b', servicePort: 80 }), /precisely one of/],
    ['a Service without port', tg({ serviceName: 'b' }), /missing servicePort/],
    ['a weight above 999', tg({ serviceName: 'b', servicePort: 80, weight: 1000 }), /from 0 to 999/],
    ['more than 5 groups', many(6), /at most 5/],
    [
      'several groups without weights',
      JSON.stringify({
        type: 'forward',
        forwardConfig: { targetGroups: [{ targetGroupARN: 'a' }, { targetGroupARN: 'b', weight: 1 }] },
      }),
      /weight must be set/,
    ],
    ['a weight that is a string', tg({ targetGroupARN: 'a', weight: '1' }), /expected an integer/],
  ])('refuses %s', (_, raw, message) => {
    expect(() => parseAction(raw)).toThrow(JsonShapeError);
    expect(() => parseAction(raw)).toThrow(message);
  });

  it('accepts five groups', () => {
    expect(parseAction(many(5))).toMatchObject({ type: 'forward', targets: expect.any(Array) });
  });
});

describe('normalizePort', () => {
  it('reads a string of digits as the port number and keeps names', () => {
    expect(normalizePort('80')).toBe(80);
    expect(normalizePort(443)).toBe(443);
    expect(normalizePort('http')).toBe('http');
  });
});
