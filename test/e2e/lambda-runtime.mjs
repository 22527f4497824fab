// One Lambda execution environment for the end-to-end suite (lambda.ts starts it): a process of its own, with
// the environment the stack gives the function, that imports the built bundle as the Node.js runtime does
// (`index.handler` of index.mjs) and calls the handler once per invocation sent over IPC. Plain JavaScript, so
// node runs it as Lambda runs the bundle: with nothing of the test's TypeScript toolchain loaded.
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const [bundle, functionName, timeoutSeconds] = process.argv.slice(2);
if (!bundle || !functionName || !timeoutSeconds)
  throw new Error('usage: lambda-runtime.mjs <index.mjs> <name> <timeout>');

// Loading the module is the cold start: a setting the function refuses fails here, as it fails a container's init.
const loaded = import(pathToFileURL(bundle).href);

/** The context object the runtime passes: what Powertools' logger middleware reads from it. */
function contextFor(deadline) {
  return {
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION}:123456789012:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'e2e',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
}

process.on('message', async ({ id, event }) => {
  try {
    const { handler } = await loaded;
    if (typeof handler !== 'function') throw new Error(`${bundle} exports no handler function`);
    const result = await handler(event, contextFor(Date.now() + Number(timeoutSeconds) * 1000));
    process.send({ id, result: result ?? null });
  } catch (err) {
    process.send({ id, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
});
// Ready once loaded: a function that fails its init never takes an invocation (startLambda reports its output).
await loaded;
process.send({ ready: true });
