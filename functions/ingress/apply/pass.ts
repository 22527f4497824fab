import type { GroupId } from '../../../shared/ingress/membership.ts';
import { stackName } from '../../../shared/ingress/membership.ts';
import { INGRESS_ANNOTATION_PREFIX } from '../../../shared/k8s/ingress-types.ts';
import type { LoadBalancerContext, SettingNames } from '../../../shared/load-balancers/context.ts';
import { LazySharedReads } from '../../../shared/load-balancers/reads.ts';
import { type IngressDeps, IngressModelError } from '../deps.ts';
import { TAG } from './tags.ts';

/**
 * One pass over one IngressGroup, as the resource modules of shared/load-balancers see it: the group's stack is the
 * owner of every resource (the `ingress.k8s.aws/stack` tag), problems are errors naming the Ingress annotations.
 */
export interface GroupPass {
  deps: IngressDeps;
  group: GroupId;
  reads: LazySharedReads;
  ctx: LoadBalancerContext;
  /** Warnings for the group's members, gathered while applying (an Event each at the end). */
  warnings: string[];
}

const annotation = (name: string) => `${INGRESS_ANNOTATION_PREFIX}${name}`;

/** The Ingress annotations that set what the resource modules may complain about. */
export const INGRESS_SETTING_NAMES: SettingNames = {
  subnets: annotation('subnets'),
  ipAddressType: annotation('ip-address-type'),
  eipAllocations: annotation('eip-allocations'),
  privateIpv4Addresses: annotation('private-ipv4-addresses'),
  securityGroups: annotation('security-groups'),
  extraSecurityGroups: annotation('security-groups'),
};

export function startGroupPass(deps: IngressDeps, group: GroupId): GroupPass {
  const reads = new LazySharedReads(deps);
  const pass: GroupPass = {
    deps,
    group,
    reads,
    warnings: [],
    ctx: {
      ec2: deps.ec2,
      elbv2: deps.elbv2,
      clusterName: deps.clusterName,
      vpcId: deps.vpcId,
      nodePortRange: deps.nodePortRange,
      owner: { key: TAG.stack, value: stackName(group) },
      reads,
      endpointSlices: (namespace, name) => deps.kube.listEndpointSlices(namespace, name),
      metrics: deps.metrics,
      settings: INGRESS_SETTING_NAMES,
      userError: (message) => new IngressModelError(message),
      announce: async (change) => {
        pass.warnings.push(
          `Replacing target group ${change.from} with ${change.to}: ${change.differences.map((d) => `${d.what} ${d.from} -> ${d.to}`).join(', ')}`,
        );
      },
    },
  };
  return pass;
}
