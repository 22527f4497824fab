import type { ApplicationListenerSpec, Elbv2Port, Listener, RuleAction } from '../aws/elbv2-port.ts';
import { TerminalError } from '../errors.ts';
import { planListenerCertificates } from './listeners.ts';
import { ruleContentKey } from './rule-content.ts';
import { changedEntries } from './tags.ts';

/**
 * The HTTP and HTTPS listeners of an Application Load Balancer, for any front end (an Ingress group today): one per
 * port, with its default actions, its security policy and certificates (the default one and those served by SNI) and
 * its attributes. Made when missing and kept in line; removed only by deleteUnwantedListeners, which the caller runs
 * once nothing points at what goes. Whether a port is taken is read from DescribeListeners, never left to
 * CreateListener (emulators accept a second listener on a port; docs/emulator-differences.md
 * `elbv2.listener-create-same-port`).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-listeners.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/create-https-listener.html
 */

export interface DesiredApplicationListener {
  port: number;
  protocol: 'HTTP' | 'HTTPS';
  /** HTTPS only; undefined leaves the listener's (AWS's default on create). */
  sslPolicy?: string;
  /** HTTPS only: the default certificate first, then those served by SNI. */
  certificateArns: string[];
  defaultActions: RuleAction[];
  /** Set where they differ; attributes not named are left as they are. */
  attributes: Record<string, string>;
  /** Put on a listener when it is created (ownership). */
  tags: Record<string, string>;
}

/**
 * Creates the missing listeners and keeps the others in line: protocol, default actions, security policy, default
 * certificate (one ModifyListener), SNI certificates (Add/RemoveListenerCertificates), attributes. Nothing to change
 * writes nothing. Answers each desired port's listener as it now is.
 */
export async function ensureApplicationListeners(
  loadBalancerArn: string,
  desired: readonly DesiredApplicationListener[],
  current: readonly Listener[],
  elbv2: Elbv2Port,
): Promise<Map<number, Listener>> {
  const { first } = byPort(current);
  const out = new Map<number, Listener>();
  for (const want of desired) {
    const have = first.get(want.port);
    out.set(want.port, have ? await keepInLine(have, want, elbv2) : await create(loadBalancerArn, want, elbv2));
  }
  return out;
}

/**
 * Deletes the listeners of ports no longer desired (AWS deletes their rules with them), and any second listener on
 * a port (which AWS would refuse to make, but an emulator makes). Answers how many it deleted.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteListener.html
 */
export async function deleteUnwantedListeners(
  desired: readonly DesiredApplicationListener[],
  current: readonly Listener[],
  elbv2: Elbv2Port,
): Promise<number> {
  const wanted = new Set(desired.map((d) => d.port));
  const { first } = byPort(current);
  let deleted = 0;
  for (const listener of current) {
    if (wanted.has(listener.port) && first.get(listener.port) === listener) continue;
    if ((await elbv2.deleteListener(listener.arn)) === 'deleted') deleted++;
  }
  return deleted;
}

function byPort(current: readonly Listener[]): { first: Map<number, Listener> } {
  const first = new Map<number, Listener>();
  for (const listener of current) if (!first.has(listener.port)) first.set(listener.port, listener);
  return { first };
}

function specOf(want: DesiredApplicationListener): ApplicationListenerSpec {
  const spec: ApplicationListenerSpec = {
    port: want.port,
    protocol: want.protocol,
    defaultActions: want.defaultActions,
  };
  if (want.protocol === 'HTTPS') {
    const certificateArn = want.certificateArns[0];
    // AWS refuses an HTTPS listener without a certificate; an emulator may not, so it is checked here.
    if (!certificateArn) {
      throw new TerminalError(`listener HTTPS:${want.port}: an HTTPS listener needs a certificate`);
    }
    spec.certificateArn = certificateArn;
    if (want.sslPolicy) spec.sslPolicy = want.sslPolicy;
  }
  return spec;
}

/** The SNI certificates: every certificate but the default one, once each. */
function sniOf(want: DesiredApplicationListener): string[] {
  if (want.protocol !== 'HTTPS') return [];
  return [...new Set(want.certificateArns.slice(1))].filter((arn) => arn !== want.certificateArns[0]);
}

async function create(loadBalancerArn: string, want: DesiredApplicationListener, elbv2: Elbv2Port): Promise<Listener> {
  const listener = await elbv2.createApplicationListener(loadBalancerArn, specOf(want), want.tags);
  const sni = sniOf(want);
  if (sni.length > 0) await elbv2.addListenerCertificates(listener.arn, sni);
  if (Object.keys(want.attributes).length > 0) await elbv2.modifyListenerAttributes(listener.arn, want.attributes);
  return listener;
}

/** Whether ModifyListener is needed: the protocol, the default actions, or an HTTPS listener's policy or certificate. */
function differs(have: Listener, want: DesiredApplicationListener): boolean {
  if (have.protocol !== want.protocol) return true;
  const actions = (a: readonly RuleAction[]) => ruleContentKey({ conditions: [], actions: a });
  if (actions(have.defaultActions ?? []) !== actions(want.defaultActions)) return true;
  if (want.protocol !== 'HTTPS') return false;
  if ((have.certificateArns[0] ?? '') !== (want.certificateArns[0] ?? '')) return true;
  return want.sslPolicy !== undefined && have.sslPolicy !== want.sslPolicy;
}

async function keepInLine(have: Listener, want: DesiredApplicationListener, elbv2: Elbv2Port): Promise<Listener> {
  const spec = specOf(want);
  const sni = sniOf(want);
  const stillHttps = have.protocol === 'HTTPS' && want.protocol === 'HTTPS';
  let add = want.protocol === 'HTTPS' ? sni : [];
  if (stillHttps) {
    // Certificates that go are removed before the default changes: one about to become the default is then still
    // an ordinary one, which AWS lets go (planListenerCertificates).
    const listed = await elbv2.describeListenerCertificates(have.arn);
    const certs = planListenerCertificates(sni, listed, {
      current: have.certificateArns[0],
      next: spec.certificateArn,
    });
    if (certs.remove.length > 0) await elbv2.removeListenerCertificates(have.arn, certs.remove);
    add = certs.add;
  }
  let now = have;
  if (differs(have, want)) {
    await elbv2.modifyApplicationListener(have.arn, spec);
    now = {
      ...have,
      protocol: want.protocol,
      defaultActions: want.defaultActions,
      certificateArns: spec.certificateArn ? [spec.certificateArn] : [],
    };
    if (want.protocol === 'HTTPS') now.sslPolicy = spec.sslPolicy ?? have.sslPolicy;
    else delete now.sslPolicy;
    const only = want.defaultActions.length === 1 ? want.defaultActions[0] : undefined;
    if (only?.type === 'forward' && only.targetGroups.length === 1) now.targetGroupArn = only.targetGroups[0]!.arn;
    else delete now.targetGroupArn;
    if (stillHttps && sni.length > 0) {
      // Read again: an emulator drops the SNI list on ModifyListener (docs/emulator-differences.md
      // `elbv2.modify-listener-keeps-sni`); on AWS this finds nothing more to add.
      const listed = await elbv2.describeListenerCertificates(have.arn);
      add = planListenerCertificates(sni, listed, { current: spec.certificateArn, next: spec.certificateArn }).add;
    }
  }
  if (add.length > 0) await elbv2.addListenerCertificates(have.arn, add);
  if (Object.keys(want.attributes).length > 0) {
    const changed = changedEntries(want.attributes, await elbv2.describeListenerAttributes(have.arn));
    if (Object.keys(changed).length > 0) await elbv2.modifyListenerAttributes(have.arn, changed);
  }
  return now;
}
