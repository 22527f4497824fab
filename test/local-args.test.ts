import { describe, expect, it } from 'vitest';
import { parseLocalArgs, UsageError } from '../bin/args.ts';

/** `npm start` writes to a real cluster only when asked in so many words, whatever the shell exports. */
describe('npm start arguments', () => {
  it('runs the simulation when only KUBECONFIG is set, and says it ignored it', () => {
    const args = parseLocalArgs([], { KUBECONFIG: '/home/me/.kube/prod', CLUSTER_NAME: 'prod' });
    expect(args).toMatchObject({ mode: 'simulation', kubeconfigIgnored: true, nodes: 9, speed: 10 });
    expect(parseLocalArgs([], {})).toMatchObject({ mode: 'simulation', kubeconfigIgnored: false });
  });

  it('runs against a real cluster with --real (the kubeconfig from the environment, as kubectl) or --kubeconfig PATH', () => {
    const real = parseLocalArgs(['--real'], { KUBECONFIG: '/k', CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1' });
    expect(real).toMatchObject({ mode: 'real', clusterName: 'prod', region: 'eu-west-1' });
    expect(real).not.toHaveProperty('kubeconfig');
    expect(parseLocalArgs(['--kubeconfig', '/tmp/kc'], {})).toMatchObject({ mode: 'real', kubeconfig: '/tmp/kc' });
  });

  it('real mode: flags win over the environment; the Lease and EC2 events queue have defaults, the resync is as deployed', () => {
    const args = parseLocalArgs(['--real', '--cluster-name', 'a', '--vpc-id', 'vpc-1'], {
      CLUSTER_NAME: 'b',
      VPC_ID: 'vpc-2',
      CLUSTER_CIDRS: '10.244.0.0/16',
      EC2_EVENTS_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/ec2-events',
    });
    expect(args).toMatchObject({
      mode: 'real',
      clusterName: 'a',
      vpcId: 'vpc-1',
      clusterCidrs: '10.244.0.0/16',
      interruption: false,
      ipam: false,
      lease: { namespace: 'kube-system', name: 'serverless-ccm-relay' },
      ec2EventsQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/111122223333/ec2-events',
      once: false,
      dryRun: false,
    });
    expect(args).not.toHaveProperty('resyncSeconds');
    expect(parseLocalArgs(['--real', '--resync-seconds', '30'], {})).toMatchObject({ resyncSeconds: 30 });
    expect(parseLocalArgs(['--real', '--lease', 'ops/my-lease'], {})).toMatchObject({
      lease: { namespace: 'ops', name: 'my-lease' },
    });
  });

  it('real mode: the interruption controller and IPAM are switched on as the stage switches them, or by flag', () => {
    expect(parseLocalArgs(['--real'], { CCM_INTERRUPTION: 'true', CCM_IPAM: 'false' })).toMatchObject({
      interruption: true,
      ipam: false,
    });
    // The stage's own reading of the variable: what deploys the controller runs it here.
    expect(parseLocalArgs(['--real'], { CCM_IPAM: '1' })).toMatchObject({ ipam: true });
    expect(parseLocalArgs(['--real', '--interruption', '--ipam'], {})).toMatchObject({
      interruption: true,
      ipam: true,
    });
    expect(() => parseLocalArgs(['--real'], { CCM_INTERRUPTION: 'maybe' })).toThrow(
      'CCM_INTERRUPTION must be true or false (got "maybe")',
    );
  });

  it('real mode: the webhooks are served only with IPAM, on a port given', () => {
    expect(
      parseLocalArgs(['--real', '--ipam', '--webhook-port', '9443', '--webhook-host', '10.0.0.5'], {}),
    ).toMatchObject({ webhooks: { port: 9443, host: '10.0.0.5' } });
    expect(() => parseLocalArgs(['--real', '--webhook-port', '9443'], {})).toThrow(/add --ipam/);
    expect(() => parseLocalArgs(['--real', '--ipam', '--webhook-host', 'laptop'], {})).toThrow(/give --webhook-port/);
    expect(() => parseLocalArgs(['--real', '--ipam', '--webhook-port', '70000'], {})).toThrow(
      '--webhook-port must be an integer from 1 to 65535',
    );
  });

  it('refuses real-cluster flags without --real, and simulation flags with it, naming them', () => {
    expect(() => parseLocalArgs(['--cluster-name', 'prod', '--dry-run'], { KUBECONFIG: '/k' })).toThrow(
      new UsageError(
        '--cluster-name, --dry-run: real-cluster options; add --real (the cluster KUBECONFIG names) or --kubeconfig PATH',
      ),
    );
    expect(() => parseLocalArgs(['--real', '--nodes', '4'], {})).toThrow(/--nodes: simulation options/);
  });

  it('refuses malformed values with the flag and the value', () => {
    expect(() => parseLocalArgs(['--nodes', 'two'], {})).toThrow('--nodes must be an integer >= 3 (got "two")');
    expect(() => parseLocalArgs(['--real', '--resync-seconds', '1'], {})).toThrow(
      '--resync-seconds must be an integer >= 5',
    );
    expect(() => parseLocalArgs(['--real', '--lease', 'no-slash'], {})).toThrow('--lease must be NAMESPACE/NAME');
    expect(() => parseLocalArgs(['--real', '--ec2-events-queue-url', 'queue'], {})).toThrow(
      '--ec2-events-queue-url must be an SQS queue URL',
    );
    expect(() => parseLocalArgs(['--bogus'], {})).toThrow(UsageError);
  });
});
