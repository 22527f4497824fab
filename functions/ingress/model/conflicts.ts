import type { Problem } from './types.ts';

/**
 * Settings an IngressGroup shares (the reference's "Exclusive" annotations: one load balancer has one scheme, one
 * listener on a port has one protocol...). The reference fails the whole group when two members disagree; here the
 * first member in group order that sets a value wins, and a later member that sets a different one is kept (its
 * rules stay as they were) with a problem naming the setting and the member it disagrees with, while the others
 * apply. A kept member's values are never committed, so it cannot take a setting from the members after it.
 */

/** One member's value for one shared setting. */
export interface Claim {
  /** The setting: `scheme`, `tag:Team`, `listener:443:sslPolicy`... */
  key: string;
  /** Where the member set it: the annotation or IngressClassParams field. */
  at: string;
  value: unknown;
  /** Equal values have equal `same` (sets sorted, so order does not matter where AWS ignores it). */
  same: string;
  /** As the user reads it in a problem. */
  shown: string;
}

export interface Held extends Claim {
  /** `namespace/name` of the member whose value the group uses. */
  member: string;
}

/** A claim on `key`; `unordered` lists compare as sets. */
export function claim(key: string, at: string, value: unknown, options: { unordered?: boolean } = {}): Claim {
  const normal = options.unordered && Array.isArray(value) ? [...new Set(value.map(String))].sort() : value;
  const same = JSON.stringify(normal, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
  const shown = Array.isArray(value) ? value.join(',') : typeof value === 'string' ? value : same;
  return { key, at, value, same, shown };
}

export class GroupSettings {
  private readonly held = new Map<string, Held>();

  /** A problem for each claim whose setting an earlier member holds with another value. */
  disagreements(claims: readonly Claim[]): Problem[] {
    const problems: Problem[] = [];
    for (const c of claims) {
      const held = this.held.get(c.key);
      if (!held || held.same === c.same) continue;
      problems.push({
        at: c.at,
        message: `"${c.shown}" conflicts with "${held.shown}" set by ${held.member} (${held.at}), which comes first in the group and wins`,
      });
    }
    return problems;
  }

  /** The member's values become the group's where no earlier member set one. */
  commit(member: string, claims: readonly Claim[]): void {
    for (const c of claims) if (!this.held.has(c.key)) this.held.set(c.key, { ...c, member });
  }

  get<T>(key: string): T | undefined {
    return this.held.get(key)?.value as T | undefined;
  }

  holder(key: string): Held | undefined {
    return this.held.get(key);
  }

  /** Held settings whose key starts with `prefix`, by the rest of the key. */
  byPrefix<T>(prefix: string): Record<string, T> {
    const out: Record<string, T> = {};
    for (const [key, held] of this.held) if (key.startsWith(prefix)) out[key.slice(prefix.length)] = held.value as T;
    return out;
  }

  /** A copy to try a member's claims on without touching this one. */
  clone(): GroupSettings {
    const copy = new GroupSettings();
    for (const [key, held] of this.held) copy.held.set(key, held);
    return copy;
  }
}
