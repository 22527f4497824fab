import { POD_IP_ANNOTATION } from '../../../shared/k8s/ipam-names.ts';
import { type AdmissionRequest, type AdmissionResponse, allow, deny } from './admission.ts';
import type { IpamSwitch } from './ipam-switch.ts';

/**
 * `vpod.vpc.k8s.aws`: the Pod address annotation is the controller's answer to the Windows CNI, so
 * nobody else may write it. A new Pod may not carry it at all; on update only the controller's own
 * identities may add, change or remove it. Only while Windows IPAM is on, as the reference does:
 * otherwise the annotation is nobody's (an older controller on the data plane may be writing it).
 */

interface PodShape {
  metadata?: { annotations?: Record<string, string> };
}

const annotationOf = (object: unknown): string | undefined =>
  (object as PodShape | null | undefined)?.metadata?.annotations?.[POD_IP_ANNOTATION];

/**
 * Who the controller is, as the API server names the requester (`request.userInfo.username`). An
 * entry ending in `*` matches every username starting with what precedes it (an assumed role's
 * sessions: `arn:aws:sts::<account>:assumed-role/<role>/*`).
 */
export class ControllerIdentities {
  private readonly exact: Set<string>;
  private readonly prefixes: string[];

  constructor(readonly usernames: readonly string[]) {
    this.exact = new Set(usernames.filter((u) => !u.endsWith('*')));
    this.prefixes = usernames.filter((u) => u.endsWith('*')).map((u) => u.slice(0, -1));
  }

  includes(username: string | undefined): boolean {
    if (!username) return false;
    return this.exact.has(username) || this.prefixes.some((p) => username.startsWith(p));
  }
}

export async function validatePod(
  request: AdmissionRequest,
  controller: ControllerIdentities,
  ipam: IpamSwitch,
): Promise<AdmissionResponse> {
  const requester = request.userInfo?.username || '(unknown user)';
  if (request.operation === 'CREATE') {
    if (annotationOf(request.object) === undefined || !(await ipam.enabled())) return allow(request.uid);
    return deny(
      request.uid,
      `annotation ${POD_IP_ANNOTATION} cannot be set on a new Pod (requested by ${requester}): the IP address controller writes it`,
    );
  }
  if (request.operation !== 'UPDATE') return allow(request.uid);
  const before = annotationOf(request.oldObject);
  const after = annotationOf(request.object);
  if (before === after || controller.includes(request.userInfo?.username)) return allow(request.uid);
  if (!(await ipam.enabled())) return allow(request.uid);
  const change = before === undefined ? 'added' : after === undefined ? 'removed' : 'changed';
  return deny(
    request.uid,
    `annotation ${POD_IP_ANNOTATION} can only be ${change} by the IP address controller, not by ${requester}`,
  );
}
