import { DescribeRegionsCommand, EC2Client } from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_AVAILABLE, EMULATOR_SKIPPED_MESSAGE, type Emulator, startEmulator } from '../helpers/emulator.ts';

if (!EMULATOR_AVAILABLE) console.warn(EMULATOR_SKIPPED_MESSAGE);

describe.skipIf(!EMULATOR_AVAILABLE)('the AWS API emulator harness', () => {
  let emulator: Emulator;
  beforeAll(async () => {
    emulator = await startEmulator();
  });
  afterAll(async () => {
    await emulator?.stop();
  });

  it('starts on a free loopback port and answers the real EC2 wire protocol', async () => {
    expect(emulator.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ec2 = new EC2Client(emulator.clientConfig);
    const regions = await ec2.send(new DescribeRegionsCommand({}));
    expect(regions.Regions?.map((r) => r.RegionName)).toContain('eu-west-1');
  });

  it('is stopped by the setup: the port no longer answers after stop()', async () => {
    const second = await startEmulator();
    await second.stop();
    await expect(fetch(`${second.endpoint}/moto-api/`)).rejects.toThrow();
  });
});
