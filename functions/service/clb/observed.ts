import type { ClassicLoadBalancer, ElbPort } from '../../../shared/aws/elb-port.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import { ANNOTATION, ownedByService } from '../annotations.ts';
import { AnnotationError } from '../deps.ts';

/** A Classic ELB as one look found it, with its tags. */
export interface ObservedClassic {
  lb: ClassicLoadBalancer;
  tags: Record<string, string>;
}

/**
 * The Classic ELB of that name when its tags say it is the Service's (`serviceKey`). One of that name that is
 * not is absent, or refused when `toBuild` (a name this pass would create): never adopt or share another's.
 */
export async function findClassic(
  elb: ElbPort,
  owner: { clusterName: string; serviceKey: string },
  name: string,
  toBuild: boolean,
): Promise<ObservedClassic | undefined> {
  const lb = await elb.findLoadBalancer(name);
  if (!lb) return undefined;
  const tags = (await elb.describeTags([lb.name])).get(lb.name) ?? {};
  if (ownedByService(tags, owner.clusterName, owner.serviceKey)) return { lb, tags };
  if (!toBuild) return undefined;
  throw new AnnotationError(
    `load balancer name ${name} is taken by ${tags[LABEL_SERVICE_NAME] ?? 'a Classic ELB this cluster does not own'}; set ${ANNOTATION.name} to another name`,
  );
}
