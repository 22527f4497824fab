import { backend, makeIngress, makeService, path, rule } from '../../functions/ingress/model/testing/builders.ts';
import { EC2_WRITE_OPERATIONS } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { ELBV2_WRITE_OPERATIONS } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { createIngressWorld, type IngressWorld } from '../helpers/ingress-world.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- ingress';
const SHOP: GroupId = { explicit: true, name: 'shop' };
const MEMBERS = 50;

/**
 * AWS API volume of the Ingress controller on one IngressGroup of 50 Ingresses with two paths each (100 rules, 50
 * target groups, 6 Nodes): the commands the real adapters send to the fake EC2 and ELBv2 APIs. Creating it, a pass
 * with nothing to do, one path added in the middle of the group, one removed, a member moved to another group.
 */
function counts(w: IngressWorld) {
  const byOperation = [...w.elbv2.calls.entries(), ...w.ec2.calls.entries()].filter(([, n]) => n > 0);
  const writes = new Set<string>([...ELBV2_WRITE_OPERATIONS, ...EC2_WRITE_OPERATIONS]);
  return {
    total: w.awsCalls(),
    writes: w.awsWrites(),
    detail: byOperation
      .filter(([op]) => writes.has(op))
      .map(([op, n]) => `${op} ${n}`)
      .join(', '),
  };
}

function putMember(w: IngressWorld, i: number, secondPath = true, group = 'shop') {
  const name = `app-${String(i).padStart(2, '0')}`;
  const paths = [path(`/${name}/a`, 'Prefix', backend(name, 80))];
  if (secondPath) paths.push(path(`/${name}/b`, 'Exact', backend(name, 80)));
  w.ingresses.putIngress(
    makeIngress({ name, annotations: { 'group.name': group }, rules: [rule('shop.example.com', ...paths)] }),
  );
}

async function measure(w: IngressWorld, change: () => void, groups: GroupId[] = [SHOP]) {
  w.resetCounters();
  change();
  const passes = await w.converge(groups);
  return { ...counts(w), passes };
}

export async function run(): Promise<BenchResult[]> {
  const w = createIngressWorld();
  for (let i = 1; i <= 6; i++) w.addNode(i);
  for (let i = 0; i < MEMBERS; i++) {
    const name = `app-${String(i).padStart(2, '0')}`;
    w.kube.putService(makeService({ name }));
  }
  const created = await measure(w, () => {
    for (let i = 0; i < MEMBERS; i++) putMember(w, i);
  });
  const noop = await measure(w, () => {});
  // 100 rules is AWS's quota per load balancer: the path is removed first, then added back.
  const removed = await measure(w, () => putMember(w, 25, false));
  const added = await measure(w, () => putMember(w, 25, true));
  const moved = await measure(w, () => putMember(w, 30, true, 'other'), [SHOP, { explicit: true, name: 'other' }]);
  const row = (name: string, m: { total: number; writes: number; detail: string }, target?: string): BenchResult[] => [
    { name: `ingress ${name}: AWS calls`, value: m.total, unit: 'calls', rerun: RERUN, ...(target ? { target } : {}) },
    { name: `ingress ${name}: AWS writes`, value: m.writes, unit: 'calls', rerun: RERUN, note: m.detail },
  ];
  return [
    ...row(`create a group of ${MEMBERS} Ingresses x 2 paths`, created),
    ...row('no-op pass', noop, '<= 5 calls, 0 writes'),
    ...row('one path removed in the middle', removed, '<= 4 writes'),
    ...row('one path added in the middle', added, '<= 4 writes'),
    ...row('a member moved to another group', moved),
  ];
}
