import type { TargetGroupBinding } from '../../../../shared/k8s/tgb-types.ts';
import type { Service } from '../../../../shared/k8s/types.ts';
import type { TgbAdmissionReads } from '../tgb-admission-reads.ts';

/** The webhooks' reads over objects held in memory, counting the lists and failing them on demand. */
export class FakeTgbAdmissionReads implements TgbAdmissionReads {
  readonly bindings: TargetGroupBinding[] = [];
  readonly services: Service[] = [];
  /** Each list made: `bindings:<namespace or *>`, `services:<namespace>`. */
  readonly calls: string[] = [];
  failWith: Error | undefined;

  async listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]> {
    this.calls.push(`bindings:${namespace ?? '*'}`);
    if (this.failWith) throw this.failWith;
    return structuredClone(this.bindings.filter((b) => namespace === undefined || b.metadata.namespace === namespace));
  }

  async listServices(namespace: string): Promise<Service[]> {
    this.calls.push(`services:${namespace}`);
    if (this.failWith) throw this.failWith;
    return structuredClone(this.services.filter((s) => s.metadata.namespace === namespace));
  }
}
