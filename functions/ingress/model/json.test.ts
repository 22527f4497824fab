import { describe, expect, it } from 'vitest';
import {
  asObject,
  field,
  JsonShapeError,
  optionalBoolean,
  optionalInteger,
  optionalIntOrString,
  optionalString,
  parseJson,
  stringList,
} from './json.ts';

describe('JSON annotations read as Go reads them', () => {
  it('matches keys whatever their case, a later key winning', () => {
    const o = asObject(parseJson('{"Type":"redirect","RedirectConfig":{"StatusCode":"HTTP_301"}}'), 'x');
    expect(field(o, 'type')).toBe('redirect');
    expect(field(asObject(field(o, 'redirectConfig'), 'y'), 'statusCode')).toBe('HTTP_301');
    expect(field(asObject(parseJson('{"type":"a","TYPE":"b"}'), 'x'), 'type')).toBe('b');
    expect(field(asObject(parseJson('{"TYPE":"b","type":"a"}'), 'x'), 'type')).toBe('a');
  });

  it('takes null as absent and ignores unknown keys', () => {
    const o = asObject(parseJson('{"a":null,"other":1}'), 'x');
    expect(field(o, 'a')).toBeUndefined();
    expect(optionalString(o, 'a', 'x')).toBeUndefined();
    expect(stringList(o, 'a', 'x')).toEqual([]);
  });

  it.each([
    ['a string', () => optionalString({ v: 1 }, 'v', 'x'), 'x.v: expected a string, got number'],
    ['a boolean', () => optionalBoolean({ v: 'true' }, 'v', 'x'), 'x.v: expected true or false, got string'],
    ['an integer', () => optionalInteger({ v: 1.5 }, 'v', 'x'), 'x.v: expected an integer, got number'],
    ['a list of strings', () => stringList({ V: ['a', 2] }, 'v', 'x'), 'x.v[1]: expected a string, got number'],
    ['an object', () => asObject([], 'x'), 'x: expected an object, got array'],
    ['a port', () => optionalIntOrString({ p: true }, 'p', 'x'), 'x.p: expected a port number or name, got boolean'],
  ])('refuses a value that is not %s', (_, read, message) => {
    expect(read).toThrow(new JsonShapeError(message));
  });

  it('reads a port as a number or a name', () => {
    expect(optionalIntOrString({ p: 80 }, 'p', 'x')).toBe(80);
    expect(optionalIntOrString({ P: 'http' }, 'p', 'x')).toBe('http');
  });

  it('says why JSON does not parse', () => {
    expect(() => parseJson('{"type":')).toThrow(JsonShapeError);
    expect(() => parseJson('{"type":')).toThrow(/^invalid JSON: /);
  });
});
