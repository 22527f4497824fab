/** Thrown by a crashing port: the process "died" right after an AWS call took effect. */
export class Crash extends Error {
  constructor(readonly afterCall: number) {
    super(`crash injected after AWS call ${afterCall}`);
    this.name = 'Crash';
  }
}

/**
 * Wrap ports so that the `n`-th call across all of them takes effect and then throws `Crash`, as a Lambda
 * killed between an AWS call and the next line would. Every method call counts, reads included. The
 * counter is shared, so `n` walks through a reconcile's calls in order whatever port they go to.
 */
export function crashAfter<T extends object[]>(n: number, ...ports: T): { ports: T; calls: () => number } {
  let count = 0;
  const wrap = <P extends object>(port: P): P =>
    new Proxy(port, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          let result: unknown;
          let failure: unknown;
          let failed = false;
          try {
            result = await value.apply(target, args);
          } catch (err) {
            failed = true;
            failure = err;
          }
          count += 1;
          if (count === n) throw new Crash(n);
          if (failed) throw failure;
          return result;
        };
      },
    });
  return { ports: ports.map(wrap) as T, calls: () => count };
}

/** Count every method call of the ports (for how many crash points a scenario has). */
export function countingCalls<T extends object[]>(...ports: T): { ports: T; calls: () => number } {
  return crashAfter(Number.POSITIVE_INFINITY, ...ports);
}
