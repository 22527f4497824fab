import { BETA_OS_LABEL, IPV4_RESOURCE, OS_LABEL } from '../../../shared/k8s/ipam-names.ts';
import {
  type AdmissionRequest,
  type AdmissionResponse,
  allow,
  type JsonPatchOperation,
  pointerToken,
  withPatch,
} from './admission.ts';
import type { IpamSwitch } from './ipam-switch.ts';

/**
 * `mpod.vpc.k8s.aws`: a Pod that selects Windows Nodes asks for one VPC address, as a request and a
 * limit of the extended resource on its first container, so the scheduler places it only where the
 * Node advertises free addresses. Host-network Pods use the Node's address and are left alone.
 * Like the VPC resource controller's webhook, only `nodeSelector` counts (not affinity), only the
 * first container is changed (one address per Pod), and only while Windows IPAM is on: while it is
 * off no Node advertises the resource, and a Pod asking for it would never be scheduled.
 */

interface PodShape {
  spec?: {
    hostNetwork?: boolean;
    nodeSelector?: Record<string, string>;
    containers?: { resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> } }[];
  };
}

export function selectsWindowsNodes(pod: PodShape): boolean {
  const selector = pod.spec?.nodeSelector ?? {};
  return selector[OS_LABEL] === 'windows' || selector[BETA_OS_LABEL] === 'windows';
}

/** The JSON Patch that makes `containers[0]` request and limit one address; empty when it already does. */
export function addressRequestPatch(pod: PodShape): JsonPatchOperation[] {
  const container = pod.spec?.containers?.[0];
  if (!container) return [];
  const base = '/spec/containers/0/resources';
  const one = { [IPV4_RESOURCE]: '1' };
  if (!container.resources) return [{ op: 'add', path: base, value: { requests: one, limits: one } }];
  const patch: JsonPatchOperation[] = [];
  for (const field of ['requests', 'limits'] as const) {
    const existing = container.resources[field];
    if (!existing) patch.push({ op: 'add', path: `${base}/${field}`, value: one });
    else if (existing[IPV4_RESOURCE] !== '1') {
      // `add` on an existing member replaces it (RFC 6902 4.1).
      patch.push({ op: 'add', path: `${base}/${field}/${pointerToken(IPV4_RESOURCE)}`, value: '1' });
    }
  }
  return patch;
}

export async function mutatePod(request: AdmissionRequest, ipam: IpamSwitch): Promise<AdmissionResponse> {
  const pod = (request.object ?? {}) as PodShape;
  if (request.operation !== 'CREATE' || pod.spec?.hostNetwork || !selectsWindowsNodes(pod)) {
    return allow(request.uid);
  }
  // Asked only for the Pods it decides (Windows ones): the answer is the watched ConfigMap's, never an API call.
  if (!(await ipam.enabled())) return allow(request.uid);
  const patch = addressRequestPatch(pod);
  return patch.length === 0 ? allow(request.uid) : withPatch(request.uid, patch);
}
