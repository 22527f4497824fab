import { classifyAwsError } from '../aws/errors.ts';
import { MetricName, type MetricsPort } from './metrics.ts';

/** What the middleware reads from the SDK's handler context (set by every SDK v3 command). */
interface CallContext {
  clientName?: string;
  commandName?: string;
}

/** Generic, so it fits every client's own handler types without naming them. */
type Middleware = <Args, Result>(
  next: (args: Args) => Promise<Result>,
  context: CallContext,
) => (args: Args) => Promise<Result>;

/**
 * The part of an SDK v3 client this needs; every `@aws-sdk/client-*` client has it. Structural so that this
 * file imports no SDK package.
 */
export interface InstrumentableClient {
  middlewareStack: {
    add(middleware: Middleware, options: { step: 'initialize'; name: string; override?: boolean }): void;
  };
}

const MIDDLEWARE_NAME = 'serverlessCcmAwsCallMetrics';

/** `operation`: `AwsCalls` by AWS service and operation; `service`: by AWS service only (docs/cost.md). */
export type AwsCallDetail = 'operation' | 'service';

/**
 * Counts `AwsCalls` per `{ awsService, operation }` (not `service`: Powertools uses that dimension for the function),
 * or per `{ awsService }` with `detail` `service`, and `AwsThrottles` per `{ awsService, operation }` when a call
 * ends in a throttling error: rare, and the operation is what one needs to know then.
 *
 * The middleware sits in the `initialize` step, which runs once per `client.send`, before serialization and
 * outside the SDK's retry middleware (in `finalizeRequest`). So one operation counts once however many HTTP
 * attempts the SDK makes, and a throttle counts only when retries did not absorb it: the numbers match the calls
 * our code makes and the throttles it actually feels. (A `deserialize`-step middleware would instead see every
 * attempt, i.e. what the service's rate limiter sees.)
 */
export function instrumentAwsClient<C extends InstrumentableClient>(
  client: C,
  metrics: MetricsPort,
  detail: AwsCallDetail = 'operation',
): C {
  client.middlewareStack.add(
    (next, context) => {
      const dimensions = {
        awsService: (context.clientName ?? 'Unknown').replace(/Client$/, ''),
        operation: (context.commandName ?? 'Unknown').replace(/Command$/, ''),
      };
      const callDimensions = detail === 'operation' ? dimensions : { awsService: dimensions.awsService };
      return async function countAwsCallAndThrottle(args) {
        metrics.count(MetricName.AwsCalls, callDimensions);
        try {
          return await next(args);
        } catch (err) {
          if (classifyAwsError(err) === 'throttled') metrics.count(MetricName.AwsThrottles, dimensions);
          throw err;
        }
      };
    },
    // override: instrumenting a client twice replaces the middleware instead of counting every call twice.
    { step: 'initialize', name: MIDDLEWARE_NAME, override: true },
  );
  return client;
}
