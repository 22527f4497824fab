import { describe, expect, it } from 'vitest';
import { parseSettings, settingsForNode } from './settings.ts';

const cm = (data: Record<string, string>) => ({ metadata: { name: 'amazon-vpc-cni', namespace: 'kube-system' }, data });
const on = (data: Record<string, string> = {}) => parseSettings(cm({ 'enable-windows-ipam': 'true', ...data }));
const prefix = (data: Record<string, string> = {}) => on({ 'enable-windows-prefix-delegation': 'true', ...data });

/**
 * The VPC resource controller's rules, as its source and docs state them:
 * - the two flags go through Go's strconv.ParseBool (pkg/condition/conditions.go; loader.go for the prefix flag):
 *   "1", "t", "T", "TRUE", "true", "True" are true, "0", "f", "F", "FALSE", "false", "False" false, anything else is
 *   an error, taken as false;
 * - the targets through strconv.Atoi (pkg/config/loader.go): an optional sign and decimal digits, nothing else;
 * - secondary-address mode (docs/windows/secondary_ip_mode_config_options.md): warm and minimum default to 3 when
 *   unset, invalid or negative; an explicit warm 0 becomes 1; minimum 0 stands;
 * - prefix delegation (docs/windows/prefix_delegation_config_options.md, pkg/pool/pool.go getPDDeviation): warm-ip
 *   1 and minimum-ip 3 by default; once either is above zero the other defaults (warm-ip 1, minimum-ip 3) and
 *   warm-prefix is ignored; else a warm-prefix above zero keeps that many free prefixes; zero or negative is unset.
 */
describe('parseSettings (the VPC CNI ConfigMap)', () => {
  it('is off without the ConfigMap or the flag', () => {
    expect(parseSettings(undefined).settings.enabled).toBe(false);
    expect(parseSettings(cm({})).settings.enabled).toBe(false);
    expect(parseSettings(cm({})).problems).toEqual([]);
  });

  it.each([
    ['1', true],
    ['t', true],
    ['T', true],
    ['TRUE', true],
    ['true', true],
    ['True', true],
    ['0', false],
    ['f', false],
    ['F', false],
    ['FALSE', false],
    ['false', false],
    ['False', false],
  ])('enable-windows-ipam "%s" is %s, as Go strconv.ParseBool reads it', (value, enabled) => {
    const { settings, problems } = parseSettings(cm({ 'enable-windows-ipam': value }));
    expect(settings.enabled).toBe(enabled);
    expect(problems).toEqual([]);
  });

  it.each([['yes'], ['on'], ['tRUE'], [' true'], ['true '], ['']])(
    'enable-windows-ipam "%s" is no boolean: off, and named',
    (value) => {
      const { settings, problems } = parseSettings(cm({ 'enable-windows-ipam': value }));
      expect(settings.enabled).toBe(false);
      expect(problems).toEqual([
        `enable-windows-ipam: "${value}" is not a boolean (true, false, 1, 0, t, f, as Go reads them); taken as false`,
      ]);
    },
  );

  it.each([['1'], ['T'], ['TRUE'], ['True']])('enable-windows-prefix-delegation "%s" turns prefixes on', (value) => {
    expect(on({ 'enable-windows-prefix-delegation': value }).settings.mode).toBe('prefix');
  });

  it.each([['0'], ['F'], ['nope']])('enable-windows-prefix-delegation "%s" keeps secondary addresses', (value) => {
    expect(on({ 'enable-windows-prefix-delegation': value }).settings.mode).toBe('secondary');
  });

  it.each([
    [{}, 3, 3],
    [{ 'warm-ip-target': '0', 'minimum-ip-target': '0' }, 1, 0],
    [{ 'warm-ip-target': '0', 'minimum-ip-target': '5' }, 1, 5],
    [{ 'warm-ip-target': '0' }, 1, 3],
    [{ 'minimum-ip-target': '0' }, 3, 0],
    [{ 'warm-ip-target': '7' }, 7, 3],
    [{ 'minimum-ip-target': '10' }, 3, 10],
    [{ 'warm-ip-target': '+4' }, 4, 3],
    [{ 'warm-ip-target': '-1', 'minimum-ip-target': '-2' }, 3, 3],
    [{ 'warm-ip-target': '1000000' }, 1_000_000, 3],
    [{ 'windows-warm-ip-target': '6', 'windows-minimum-ip-target': '2' }, 6, 2],
    [{ 'warm-ip-target': '4', 'windows-warm-ip-target': '9' }, 4, 3],
    [{ 'warm-prefix-target': '2' }, 3, 3],
  ])('secondary mode %j -> warm %i, minimum %i', (data, warm, minimum) => {
    const { settings } = on(data);
    expect(settings).toMatchObject({
      mode: 'secondary',
      warmIpTarget: warm,
      minimumIpTarget: minimum,
      warmPrefixTarget: 0,
    });
  });

  it.each([
    [{}, 1, 3, 0],
    [{ 'warm-prefix-target': '2' }, 0, 0, 2],
    [{ 'windows-warm-prefix-target': '3' }, 0, 0, 3],
    [{ 'warm-prefix-target': '2', 'warm-ip-target': '5' }, 5, 3, 0],
    [{ 'warm-prefix-target': '2', 'minimum-ip-target': '20' }, 1, 20, 0],
    [{ 'warm-ip-target': '5' }, 5, 3, 0],
    [{ 'minimum-ip-target': '20' }, 1, 20, 0],
    [{ 'warm-ip-target': '7', 'minimum-ip-target': '20' }, 7, 20, 0],
    [{ 'warm-ip-target': '0', 'minimum-ip-target': '0', 'warm-prefix-target': '0' }, 1, 3, 0],
    [{ 'warm-ip-target': '-5', 'warm-prefix-target': '-1' }, 1, 3, 0],
    [{ 'warm-ip-target': '0', 'warm-prefix-target': '1' }, 0, 0, 1],
  ])('prefix mode %j -> warm-ip %i, minimum-ip %i, warm-prefix %i', (data, warm, minimum, warmPrefix) => {
    expect(prefix(data).settings).toMatchObject({
      mode: 'prefix',
      warmIpTarget: warm,
      minimumIpTarget: minimum,
      warmPrefixTarget: warmPrefix,
    });
  });

  it.each([['ten'], [' 5'], ['5 '], ['1.5'], ['0x10'], ['1e3'], ['']])(
    'a target "%s" is no whole number (Go strconv.Atoi): the default, named',
    (value) => {
      const { settings, problems } = on({ 'warm-ip-target': value });
      expect(settings.warmIpTarget).toBe(3);
      expect(problems).toEqual([
        `warm-ip-target: "${value}" is not a whole number of addresses (0 or more); using the default`,
      ]);
    },
  );

  it('a negative target is the default, and named', () => {
    const { settings, problems } = prefix({ 'minimum-ip-target': '-4' });
    expect(settings.minimumIpTarget).toBe(3);
    expect(problems).toEqual(['minimum-ip-target: "-4" is negative; using the default']);
  });
});

describe('settingsForNode (prefix delegation needs a Nitro instance type)', () => {
  it('a Nitro or bare-metal type keeps prefix delegation and its targets', () => {
    const { settings } = prefix({ 'warm-ip-target': '5' });
    expect(settingsForNode(settings, { prefixDelegation: true })).toEqual(settings);
  });

  it('a Xen type keeps secondary addresses, with the secondary-mode defaults (the targets set are the prefixes’)', () => {
    const { settings } = prefix({ 'warm-ip-target': '5', 'minimum-ip-target': '20' });
    expect(settingsForNode(settings, { prefixDelegation: false })).toEqual({
      enabled: true,
      mode: 'secondary',
      warmIpTarget: 3,
      minimumIpTarget: 3,
      warmPrefixTarget: 0,
    });
  });

  it('secondary mode is the same on every type', () => {
    const { settings } = on({ 'warm-ip-target': '5' });
    expect(settingsForNode(settings, { prefixDelegation: false })).toEqual(settings);
  });
});
