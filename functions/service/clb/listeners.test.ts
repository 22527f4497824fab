import { beforeEach, describe, expect, it } from 'vitest';
import type { Service } from '../../../shared/k8s/types.ts';
import { ANNOTATION } from '../annotations.ts';
import { type ClassicWorld, createClassicWorld, REFERENCE_NAME, referenceClassic } from '../testing/clb.ts';

/**
 * A Classic ELB's listeners when the Service's protocol annotations change. A Classic ELB cannot change a listener
 * in place: the one on a port is deleted and another created. So the listeners asked for must be ones AWS takes
 * (the reference's: `backend-protocol` changes a port without a certificate only for `http`), and a listener AWS
 * refuses all the same (a certificate it does not have) must not leave its port without the listener it had.
 */

let w: ClassicWorld;
beforeEach(async () => {
  w = createClassicWorld();
  w.addNode(1);
  await referenceClassic(w);
  await w.converge([w.serviceKey('web')]);
});

const edit = (change: (s: Service) => void) => w.kube.mutateService('default', 'web', change);
const annotate = (annotations: Record<string, string>) =>
  edit((s) => {
    s.metadata.annotations = annotations;
  });
const listeners = () =>
  (w.elbFake.describeNamed(REFERENCE_NAME)?.ListenerDescriptions ?? []).map(
    (d) =>
      `${d.Listener?.Protocol}:${d.Listener?.LoadBalancerPort}->${d.Listener?.InstanceProtocol}:${d.Listener?.InstancePort}${d.Listener?.SSLCertificateId ? ` ${d.Listener.SSLCertificateId}` : ''}`,
  );
const failures = () => w.kube.eventsFor('Service', 'web', 'SyncLoadBalancerFailed').map((e) => e.message);
let sent = 0;
const pass = () => w.reconcile(w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `l${++sent}` }));

describe('backend-protocol on a port without a certificate', () => {
  it.each(['ssl', 'https'])(
    '%s: the port stays TCP to TCP, as the reference keeps it, and keeps serving',
    async (p) => {
      annotate({ [ANNOTATION.backendProtocol]: p });
      await pass();
      expect(listeners()).toEqual(['TCP:80->TCP:30080']);
      expect(failures()).toEqual([]);
    },
  );

  it('http: the port becomes HTTP to HTTP, as the reference makes it', async () => {
    annotate({ [ANNOTATION.backendProtocol]: 'http' });
    await pass();
    expect(listeners()).toEqual(['HTTP:80->HTTP:30080']);
    expect(failures()).toEqual([]);
  });
});

describe('a listener AWS refuses', () => {
  const MISSING = 'arn:aws:acm:eu-west-1:111122223333:certificate/deleted';

  it('a certificate AWS does not have: the port keeps the listener it had, and the Warning names the refusal', async () => {
    w.elbFake.missingCertificates.add(MISSING);
    annotate({ [ANNOTATION.sslCert]: MISSING });
    await pass();
    expect(listeners()).toEqual(['TCP:80->TCP:30080']);
    expect(failures().at(-1)).toMatch(/CertificateNotFound|certificate/i);

    // Once the certificate exists the listener becomes SSL, in place of the TCP one.
    w.elbFake.missingCertificates.delete(MISSING);
    await w.converge([w.serviceKey('web')]);
    expect(listeners()).toEqual([`SSL:80->TCP:30080 ${MISSING}`]);
  });

  it('a new port beside a refused change: the new port serves, the old ports keep theirs', async () => {
    w.elbFake.missingCertificates.add(MISSING);
    edit((s) => {
      s.metadata.annotations = { [ANNOTATION.sslCert]: MISSING, [ANNOTATION.sslPorts]: '80' };
      s.spec!.ports = [
        ...(s.spec!.ports ?? []),
        { name: 'admin', protocol: 'TCP', port: 9000, targetPort: 9000, nodePort: 30900 },
      ];
    });
    await pass();
    expect(listeners().sort()).toEqual(['TCP:80->TCP:30080', 'TCP:9000->TCP:30900']);
  });
});
