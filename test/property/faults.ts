/**
 * The fault schedule of one faulted run: what goes wrong with each AWS call and with each key on its way to a
 * queue, as tapes indexed by call (message) number, so fast-check shrinks a failure to the few faults that matter
 * ("AWS call 17: timeout after the write"). Past the end of a tape nothing goes wrong, so every run settles.
 */

/** What happens to one AWS API call. */
export type AwsFault =
  | 'ok'
  /** RequestLimitExceeded (EC2, HTTP 503) / Throttling (ELB, HTTP 400), before any effect. */
  | 'throttle'
  /** InternalError, HTTP 500, before any effect. */
  | '5xx'
  /** The call takes effect, then the client times out: the caller sees an error for a write that succeeded. */
  | 'timeout-after-write'
  /** The call takes effect, then the Lambda dies: nothing else of the invocation happens, no record is deleted. */
  | 'crash-after-call';

/** What happens to one key (or EC2 event) sent to a queue. */
export type MessageFault =
  | 'ok'
  /** Sent twice, the second time under a new deduplication ID (a relay restart, an at-least-once replay). */
  | 'duplicate'
  /** Never sent: only the next resync round brings the key back. */
  | 'drop'
  /** Held back until the next tick, behind keys sent after it (reordering across keys; one key keeps its order). */
  | 'delay';

/** What happens to one Lambda invocation (one poll that received records). */
export type PollFault =
  | 'ok'
  /** The invocation works but its answer is lost (a Lambda timeout): its records come back after the visibility timeout. */
  | 'lose-response';

export interface FaultSchedule {
  aws: AwsFault[];
  messages: MessageFault[];
  polls: PollFault[];
  /** New security groups, target groups and secondary addresses stay unseen this long (eventual consistency). */
  newResourceInvisibleMs: number;
}

export const NO_FAULTS: FaultSchedule = { aws: [], messages: [], polls: [], newResourceInvisibleMs: 0 };

/** Thrown by every AWS (and Kubernetes) call of an invocation once it "crashed". */
export class Crash extends Error {
  constructor() {
    super('crash injected: the Lambda died after an AWS call took effect');
    this.name = 'Crash';
  }
}

/** Plays a schedule: hands out the next fault of each tape and remembers whether the running invocation died. */
export class FaultPlayer {
  private awsCalls = 0;
  private messages = 0;
  private polls = 0;
  /** The running invocation died (see `crash-after-call`): its remaining calls fail, its answer is lost. */
  crashed = false;
  /** Faults that actually happened, for the failure report. */
  readonly played: string[] = [];

  constructor(private readonly schedule: FaultSchedule) {}

  nextAws(operation: string): AwsFault {
    const n = this.awsCalls++;
    const fault = this.schedule.aws[n] ?? 'ok';
    if (fault !== 'ok') this.played.push(`aws#${n} ${operation}: ${fault}`);
    return fault;
  }

  nextMessage(what: string): MessageFault {
    const n = this.messages++;
    const fault = this.schedule.messages[n] ?? 'ok';
    if (fault !== 'ok') this.played.push(`msg#${n} ${what}: ${fault}`);
    return fault;
  }

  nextPoll(queue: string): PollFault {
    const n = this.polls++;
    const fault = this.schedule.polls[n] ?? 'ok';
    if (fault !== 'ok') this.played.push(`poll#${n} ${queue}: ${fault}`);
    return fault;
  }
}

type Sendable = { send(command: object): Promise<unknown> };

function awsError(name: string, message: string, status: number | undefined): Error {
  const err = Object.assign(new Error(message), { name });
  if (status !== undefined) Object.assign(err, { $metadata: { httpStatusCode: status }, $fault: 'server' });
  return err;
}

/**
 * The fake's `send` behind the fault tape: what the real adapter calls instead of the fake, as it would call the
 * SDK client. The fake's own state changes only when the call goes through (or "went through" before the fault).
 */
export function faultyClient(service: 'ec2' | 'elbv2' | 'elb', fake: Sendable, faults: FaultPlayer): Sendable {
  return {
    async send(command: object) {
      if (faults.crashed) throw new Crash();
      const operation = command.constructor.name.replace(/Command$/, '');
      switch (faults.nextAws(`${service}:${operation}`)) {
        case 'throttle':
          throw service === 'ec2'
            ? awsError('RequestLimitExceeded', 'Request limit exceeded.', 503)
            : awsError('Throttling', 'Rate exceeded', 400);
        case '5xx':
          throw awsError('InternalError', 'An internal error has occurred', 500);
        case 'timeout-after-write':
          await fake.send(command).catch(() => undefined);
          throw awsError('TimeoutError', 'Connection timed out after the request was sent', undefined);
        case 'crash-after-call':
          await fake.send(command).catch(() => undefined);
          faults.crashed = true;
          throw new Crash();
        default:
          return fake.send(command);
      }
    },
  };
}

/** A port whose every method fails once the running invocation crashed (the process is gone). */
export function dieWithCrash<T extends object>(port: T, faults: FaultPlayer): T {
  return new Proxy(port, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (faults.crashed) return Promise.reject(new Crash());
        return value.apply(target, args);
      };
    },
  });
}
