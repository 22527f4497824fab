import { createHash } from 'node:crypto';
import { HINT_FIELD_MAX, KeyMessage } from '../../shared/queue/message.ts';
import type { Reconciler, WatchedKind } from './controllers/index.ts';
import type { ChangeOutcome } from './controllers/module.ts';
import { newest } from './forwarder.ts';

/**
 * The way out of the change router (change-router.ts) for every key a controller module makes: held while another
 * component holds the controller's migration lock, held until a list finishes when the module asks for it, and
 * made into what a queue will take.
 */

export interface RoutedKey {
  reconciler: Reconciler;
  message: KeyMessage;
}

export interface KeySenderOptions {
  /** False while another component holds the reconciler's migration lock. */
  allows(reconciler: Reconciler): boolean;
  emit(key: RoutedKey): void;
  /** A key no queue would take (a name no Kubernetes object can have): nothing is sent for it. */
  invalid?(problem: { kind: WatchedKind; name: string; reason: string }): void;
}

export class KeySender {
  /**
   * Per kind being listed, the keys sent through `sendAfterList` so far, newest per reconciler and key: sent when
   * the list finishes. A Node's Pods are listed one after another (by name, across Nodes), so each would otherwise
   * be a key of its own whenever the previous one had already left; this way a listed Node is one key per list.
   */
  private readonly listing = new Map<WatchedKind, Map<string, RoutedKey>>();

  constructor(private readonly options: KeySenderOptions) {}

  listStarted(kind: WatchedKind): void {
    // A list started again (its continue token expired) keeps what the first attempt collected.
    if (!this.listing.has(kind)) this.listing.set(kind, new Map());
  }

  /** Send what the list of `kind` held back. */
  listFinished(kind: WatchedKind): void {
    const collected = this.listing.get(kind);
    this.listing.delete(kind);
    for (const { reconciler, message } of collected?.values() ?? []) this.send('unchanged', reconciler, [message]);
  }

  clear(): void {
    this.listing.clear();
  }

  /** Send keys now; returns `outcome` with this send's combined in (held by the migration lock, or forwarded). */
  send(outcome: ChangeOutcome, reconciler: Reconciler, keys: readonly KeyMessage[]): ChangeOutcome {
    if (keys.length === 0) return outcome;
    if (!this.options.allows(reconciler)) return outcome === 'forwarded' ? outcome : 'held';
    let sent = false;
    for (const message of keys) {
      const valid = sendable(message);
      if (valid.ok) {
        this.options.emit({ reconciler, message: valid.message });
        sent = true;
      } else {
        this.options.invalid?.({
          kind: message.kind as WatchedKind,
          name: message.name.slice(0, 300),
          reason: valid.error,
        });
      }
    }
    return sent ? 'forwarded' : outcome;
  }

  /** As `send`, but while `kind` is listed the keys wait for the list to finish (see `listing`). */
  sendAfterList(
    kind: WatchedKind,
    outcome: ChangeOutcome,
    reconciler: Reconciler,
    keys: readonly KeyMessage[],
  ): ChangeOutcome {
    const collecting = this.listing.get(kind);
    if (!collecting) return this.send(outcome, reconciler, keys);
    if (keys.length === 0) return outcome;
    if (!this.options.allows(reconciler)) return outcome === 'forwarded' ? outcome : 'held';
    // The newest revision of a key wins, as in the forwarder.
    for (const message of keys) {
      const id = `${reconciler}\u0000${message.kind}\u0000${message.name}`;
      const before = collecting.get(id);
      collecting.set(id, { reconciler, message: before ? newest(before.message, message) : message });
    }
    return 'forwarded';
  }
}

/**
 * The key message as a queue will take it: a resourceVersion longer than the schema allows is replaced by its SHA-256
 * (still one value per revision, so deduplication is unchanged) and an over-long uid is left out (it only labels
 * the hint). A name no Kubernetes object can have is refused with the schema's words.
 */
function sendable(message: KeyMessage): { ok: true; message: KeyMessage } | { ok: false; error: string } {
  const hint = message.hint && { ...message.hint };
  if (hint?.resourceVersion !== undefined && hint.resourceVersion.length > HINT_FIELD_MAX) {
    hint.resourceVersion = createHash('sha256').update(hint.resourceVersion).digest('hex');
  }
  if (hint?.uid !== undefined && hint.uid.length > HINT_FIELD_MAX) delete hint.uid;
  const candidate = hint ? { ...message, hint } : message;
  const parsed = KeyMessage.safeParse(candidate);
  if (parsed.success) return { ok: true, message: candidate };
  return { ok: false, error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
}
