import { isIP } from 'node:net';
import type { Instance } from '../aws/ec2-port.ts';
import { ANNOTATION_PROVIDED_NODE_IP } from '../k8s/node-helpers.ts';
import type { Node, NodeAddress } from '../k8s/types.ts';

/**
 * The addresses a Node should report, from its instance: the node reconciler (functions/node) writes them, and the
 * resync's node sweep (functions/resync/node-sweep.ts) applies the same rules to tell which Nodes are out of step.
 * Here, not in functions/node, because a producer never imports a reconciler. Pure: table-tested.
 */

export type IpFamily = 'ipv4' | 'ipv6';

/**
 * Node addresses from an instance, in the order the reference controller gives them.
 * IPv4: ENIs by device index, only `in-use`, every private IPv4 as InternalIP; then the public IP
 * as ExternalIP; the private DNS name as InternalDNS and Hostname; the public DNS name as ExternalDNS.
 * IPv6: the first IPv6 address of each in-use ENI as InternalIP.
 * Families are emitted in the configured order (dual-stack: the first family is the primary one); the
 * DNS names follow the IPv4 block, or come last in an IPv6-only cluster.
 */
export function instanceAddresses(instance: Instance, families: readonly IpFamily[]): NodeAddress[] {
  const enis = instance.networkInterfaces
    .filter((eni) => eni.status === 'in-use')
    .sort((a, b) => a.deviceIndex - b.deviceIndex);
  const out: NodeAddress[] = [];
  const add = (type: NodeAddress['type'], address: string | undefined) => {
    if (address && !out.some((a) => a.type === type && a.address === address)) out.push({ type, address });
  };
  const addDnsNames = () => {
    add('InternalDNS', instance.privateDnsName);
    add('Hostname', instance.privateDnsName);
    add('ExternalDNS', instance.publicDnsName);
  };
  for (const family of families) {
    if (family === 'ipv4') {
      for (const eni of enis) for (const ip of eni.privateIpAddresses) add('InternalIP', ip.address);
      add('ExternalIP', instance.publicIpAddress);
      addDnsNames();
    } else {
      for (const eni of enis) add('InternalIP', eni.ipv6Addresses[0]);
    }
  }
  addDnsNames(); // IPv6-only: the DNS names still identify the Node (no-op when IPv4 added them)
  return out;
}

export type AddressResult = { ok: true; addresses: NodeAddress[] } | { ok: false; reason: string; message: string };

/**
 * The addresses the Node should report. With `alpha.kubernetes.io/provided-node-ip` (kubelet --node-ip),
 * that IP must be one of the cloud's addresses; the matching addresses come first and the other
 * addresses of the same type are dropped, as the Kubernetes cloud node controller does. When the
 * cloud gives no Hostname, kubelet's own Hostname address is kept.
 */
export function desiredAddresses(node: Node, cloud: NodeAddress[]): AddressResult {
  let addresses = cloud;
  const provided = node.metadata.annotations?.[ANNOTATION_PROVIDED_NODE_IP];
  if (provided) {
    const providedIps = provided.split(',').map((s) => s.trim());
    const bad = providedIps.find((ip) => isIP(ip) === 0);
    if (bad !== undefined) {
      return {
        ok: false,
        reason: 'InvalidProvidedNodeIP',
        message: `annotation ${ANNOTATION_PROVIDED_NODE_IP}=${JSON.stringify(provided)} is not an IP address`,
      };
    }
    const matching = cloud.filter((a) => providedIps.some((ip) => sameIp(ip, a.address)));
    if (matching.length === 0) {
      return {
        ok: false,
        reason: 'ProvidedNodeIPNotFound',
        message: `annotation ${ANNOTATION_PROVIDED_NODE_IP}=${provided} is not one of the instance's addresses (${cloud
          .filter((a) => isIP(a.address) !== 0)
          .map((a) => a.address)
          .join(', ')})`,
      };
    }
    const matchedTypes = new Set(matching.map((a) => a.type));
    addresses = [...matching, ...cloud.filter((a) => !matchedTypes.has(a.type))];
  }
  if (!addresses.some((a) => a.type === 'Hostname')) {
    const kubeletHostname = node.status?.addresses?.find((a) => a.type === 'Hostname');
    if (kubeletHostname) addresses = [...addresses, kubeletHostname];
  }
  return { ok: true, addresses };
}

function sameIp(a: string, b: string): boolean {
  if (isIP(a) === 0 || isIP(b) === 0) return false;
  return normalizeIp(a) === normalizeIp(b);
}

function normalizeIp(ip: string): string {
  if (isIP(ip) === 4) return ip;
  // Expand IPv6 to a canonical lowercase form so "2001:db8::1" equals "2001:0db8:0:0::1".
  const [head, tail = ''] = ip.toLowerCase().split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  return groups.map((g) => g.replace(/^0+(?=.)/, '')).join(':');
}

export function addressesEqual(a: readonly NodeAddress[] = [], b: readonly NodeAddress[] = []): boolean {
  return a.length === b.length && a.every((x, i) => x.type === b[i]!.type && x.address === b[i]!.address);
}
