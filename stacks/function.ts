import { Duration, RemovalPolicy, Token } from 'aws-cdk-lib';
import { ManagedPolicy, PolicyDocument, type PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, type CfnFunction, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ConfigError, loadConfig } from '../shared/config/config.ts';
import type { FunctionName, FunctionSettings } from './config.ts';
import { type ControlPlaneContext, checkedName } from './context.ts';
import { allow } from './iam.ts';
import { eksAccessEntry, kubernetesAccessStatements, kubernetesEnvironment } from './kubernetes-access.ts';

export interface ControllerFunctionProps {
  name: FunctionName;
  description: string;
  /** Settings this function needs beyond the ones every function gets (cluster, Kubernetes access, logging). */
  environment?: Record<string, string>;
  /** Everything it calls in AWS beyond its logs and the Kubernetes API. */
  statements: PolicyStatement[];
}

/**
 * One Lambda function of the control plane: plain aws-cdk-lib `Function`, not SST's. SST's bundles
 * with its own esbuild settings (not `scripts/build.ts`'s, whose output the benchmark measures),
 * turns on X-Ray by default (another `Resource: "*"` grant), adds SST's own variables, and under
 * `sst dev` swaps the code for a bridge granted `iot:*` and `s3:*`. Here the code is the bundle of
 * `scripts/build.ts` and the role holds exactly the statements given.
 *
 * Its role has one inline policy (CloudFormation creates it with the role, before the event source
 * mapping that needs it), its own log group with a retention, and nothing managed except, for
 * functions in a VPC, AWS's `AWSLambdaVPCAccessExecutionRole` (Lambda manages the ENIs with it).
 */
export class ControllerFunction extends Construct {
  readonly function: LambdaFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;
  readonly settings: FunctionSettings;

  constructor(scope: Construct, id: string, ctx: ControlPlaneContext, props: ControllerFunctionProps) {
    super(scope, id);
    const { config } = ctx;
    this.settings = config.functions[props.name];
    const functionName = checkedName('function', ctx.name(props.name), ctx.stage);

    this.logGroup = new LogGroup(this, 'Logs', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: config.logRetentionDays as RetentionDays,
      // The name is fixed, so a retained group would make the next deploy of this stage fail.
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${functionName}: ${props.description}`,
      inlinePolicies: {
        Access: new PolicyDocument({
          statements: [
            // Only the two calls Lambda makes to ship logs, only to this group (it exists already).
            allow(['logs:CreateLogStream', 'logs:PutLogEvents'], [this.logGroup.logGroupArn], 'Logs'),
            ...kubernetesAccessStatements(this, config),
            ...props.statements,
          ],
        }),
      },
      managedPolicies: config.vpc
        ? [ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaVPCAccessExecutionRole')]
        : [],
    });

    const environment = {
      CLUSTER_NAME: config.clusterName,
      NODE_IP_FAMILIES: config.nodeIpFamilies.join(','),
      LOG_LEVEL: config.logLevel,
      AWS_CALL_METRICS: config.awsCallMetrics,
      ...kubernetesEnvironment(config),
      ...props.environment,
    };
    checkRuntimeEnvironment(props.name, environment, config.region);

    this.function = new LambdaFunction(this, 'Function', {
      functionName,
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      handler: 'index.handler',
      code: ctx.code(props.name),
      memorySize: this.settings.memoryMb,
      timeout: Duration.seconds(this.settings.timeoutSeconds),
      ...(this.settings.reservedConcurrency !== undefined
        ? { reservedConcurrentExecutions: this.settings.reservedConcurrency }
        : {}),
      role: this.role,
      logGroup: this.logGroup,
      environment,
    });
    if (config.vpc) {
      // Set on the resource directly: the L2 wants an IVpc, which would mean a VPC lookup (an AWS
      // call at synth time) or inventing zones; Lambda itself needs only the subnet and group IDs.
      (this.function.node.defaultChild as CfnFunction).vpcConfig = {
        subnetIds: config.vpc.subnetIds,
        securityGroupIds: config.vpc.securityGroupIds,
      };
    }
    eksAccessEntry(this, config, props.name, this.role);
  }
}

const ENVIRONMENT_LIMIT_BYTES = 4096;

/**
 * Run the environment a function will get through the functions' own start-up check
 * (`shared/config/config.ts`), so a setting the stage config accepts but a function would refuse
 * fails `sst deploy` before anything is created rather than every cold start afterwards. Values only
 * known at deploy time (queue URLs) are checked as a well-formed stand-in.
 */
export function checkRuntimeEnvironment(name: string, environment: Record<string, string>, region: string): void {
  const resolvedHere = Object.fromEntries(
    Object.entries(environment).map(([k, v]) => [
      k,
      Token.isUnresolved(v) ? `https://sqs.${region}.amazonaws.com/000000000000/deploy-time-value` : v,
    ]),
  );
  // Lambda refuses a function whose variables exceed 4 KB in total; a CA bundle is the usual culprit.
  // https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
  const bytes = Buffer.byteLength(JSON.stringify(resolvedHere));
  if (bytes > ENVIRONMENT_LIMIT_BYTES) {
    throw new Error(
      `function ${name}: its environment is about ${bytes} bytes, Lambda allows ${ENVIRONMENT_LIMIT_BYTES}` +
        ' (in eks mode, leave CCM_KUBERNETES_CA_DATA unset and the functions read the CA with eks:DescribeCluster)',
    );
  }
  try {
    // Lambda sets AWS_REGION itself (it is reserved), so the stacks must not.
    loadConfig({ ...resolvedHere, AWS_REGION: region });
  } catch (err) {
    if (err instanceof ConfigError) {
      throw new Error(
        `function ${name} would refuse to start with the environment the stacks give it: ${err.message}`,
        {
          cause: err,
        },
      );
    }
    throw err;
  }
}
