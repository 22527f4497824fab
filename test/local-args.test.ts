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

  it('real mode: flags win over the environment; the resync, Lease and EC2 events queue have defaults', () => {
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
      resyncSeconds: 300,
      lease: { namespace: 'kube-system', name: 'serverless-ccm-relay' },
      ec2EventsQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/111122223333/ec2-events',
      once: false,
      dryRun: false,
    });
    expect(parseLocalArgs(['--real', '--lease', 'ops/my-lease'], {})).toMatchObject({
      lease: { namespace: 'ops', name: 'my-lease' },
    });
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
