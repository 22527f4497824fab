import { describe, expect, it } from 'vitest';
import { parseSettings } from './settings.ts';

const cm = (data: Record<string, string>) => ({ metadata: { name: 'amazon-vpc-cni', namespace: 'kube-system' }, data });

describe('parseSettings (the VPC CNI ConfigMap)', () => {
  it('is off without the ConfigMap or the flag', () => {
    expect(parseSettings(undefined).settings.enabled).toBe(false);
    expect(parseSettings(cm({ 'enable-windows-ipam': 'false' })).settings.enabled).toBe(false);
    expect(parseSettings(cm({ 'enable-windows-ipam': 'true' })).settings.enabled).toBe(true);
  });

  it('secondary-address mode defaults to warm 3, minimum 3', () => {
    const { settings, problems } = parseSettings(cm({ 'enable-windows-ipam': 'true' }));
    expect(settings).toMatchObject({ mode: 'secondary', warmIpTarget: 3, minimumIpTarget: 3 });
    expect(problems).toEqual([]);
  });

  it.each([
    [{ 'warm-ip-target': '0', 'minimum-ip-target': '0' }, 3, 3],
    [{ 'warm-ip-target': '0', 'minimum-ip-target': '5' }, 1, 5],
    [{ 'warm-ip-target': '7' }, 7, 3],
    [{ 'windows-warm-ip-target': '6', 'windows-minimum-ip-target': '2' }, 6, 2],
    [{ 'warm-ip-target': '4', 'windows-warm-ip-target': '9' }, 4, 3],
  ])('secondary mode %j -> warm %i, minimum %i', (data, warm, minimum) => {
    const { settings } = parseSettings(cm({ 'enable-windows-ipam': 'true', ...data }));
    expect(settings.warmIpTarget).toBe(warm);
    expect(settings.minimumIpTarget).toBe(minimum);
  });

  it.each([
    [{}, 1, 3, 0],
    [{ 'warm-prefix-target': '2' }, 0, 0, 2],
    [{ 'warm-prefix-target': '2', 'warm-ip-target': '5' }, 5, 0, 0],
    [{ 'warm-ip-target': '0', 'minimum-ip-target': '0', 'warm-prefix-target': '0' }, 1, 3, 0],
  ])('prefix mode %j -> warm-ip %i, minimum-ip %i, warm-prefix %i', (data, warm, minimum, warmPrefix) => {
    const { settings } = parseSettings(
      cm({ 'enable-windows-ipam': 'true', 'enable-windows-prefix-delegation': 'true', ...data }),
    );
    expect(settings).toMatchObject({
      mode: 'prefix',
      warmIpTarget: warm,
      minimumIpTarget: minimum,
      warmPrefixTarget: warmPrefix,
    });
  });

  it('names an unusable value and keeps the default', () => {
    const { settings, problems } = parseSettings(cm({ 'enable-windows-ipam': 'true', 'warm-ip-target': 'ten' }));
    expect(settings.warmIpTarget).toBe(3);
    expect(problems).toEqual([
      'warm-ip-target: "ten" is not a whole number of addresses (0 or more); using the default',
    ]);
  });
});
