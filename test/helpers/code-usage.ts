import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * What a deployable entry point (a Lambda handler, the relay's main) can call outside itself, found by
 * reading the code with the TypeScript checker rather than by running it. `stacks/iam-usage.test.ts` uses
 * it to hold the IAM policies (and the documented RBAC) to exactly what the code needs.
 *
 * The analysis is reachability by reference, with the classes a program instantiates deciding which
 * implementations an interface call can land in (rapid type analysis):
 * - from the entry file's top-level statements, every function, variable or class the code refers to is
 *   visited, and so on from there; a class method is visited only when something refers to it (so a
 *   method nobody calls, like a cache helper of a shared class, adds nothing);
 * - a call through an interface (`deps.ec2.describeInstances(...)` where `ec2: Ec2Port`) is recorded as a
 *   use of that interface member, and continues into the same-named member of every class that declares
 *   `implements` of it and that the reachable code instantiates (the real adapter, never a fake the entry
 *   does not construct);
 * - `new XxxCommand(...)` of an `@aws-sdk/client-*` package is one AWS operation.
 *
 * It over-approximates where the code branches on configuration (both Kubernetes auth modes are
 * reachable from every Lambda; the caller decides which grants a mode needs) and never follows code in
 * node_modules (the SDK clients themselves call nothing but what they are given).
 */

export interface CodeUsage {
  /** `@aws-sdk/client-ec2` + `DescribeInstancesCommand` -> `ec2:DescribeInstances`, as IAM names them. */
  awsActions: Set<string>;
  /** `Ec2Port.describeInstances`: interface members the code calls (or refers to), by interface name. */
  interfaceMembers: Set<string>;
  /**
   * `CoreV1Api.readNode`: the Kubernetes API methods the code calls, of `@kubernetes/client-node` or of the
   * Lambdas' REST client (`shared/k8s/rest-api.ts`, which names its methods as client-node does).
   */
  kubernetesCalls: Set<string>;
}

/**
 * The IAM service prefix of each SDK v3 client package the code uses.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html
 */
export const IAM_PREFIX_OF_CLIENT: Readonly<Record<string, string>> = {
  'client-ec2': 'ec2',
  // Classic Load Balancers and ELBv2 share the IAM prefix (and some action names).
  'client-elastic-load-balancing': 'elasticloadbalancing',
  'client-elastic-load-balancing-v2': 'elasticloadbalancing',
  'client-sqs': 'sqs',
  // Lifecycle hooks of the interruption controller.
  'client-auto-scaling': 'autoscaling',
  // The local EC2 events plumbing (scripts/local-events.ts); no Lambda uses EventBridge's API.
  'client-eventbridge': 'events',
  'client-eks': 'eks',
  'client-secrets-manager': 'secretsmanager',
  'client-ecr': 'ecr',
  'client-ecr-public': 'ecr-public',
  'client-sts': 'sts',
  // The Ingress controller: certificate discovery and the web ACLs of its load balancers.
  'client-acm': 'acm',
  'client-wafv2': 'wafv2',
};

/** Operations IAM authorizes as another action: SQS batch calls need the single call's permission. */
const ACTION_OF_OPERATION: Readonly<Record<string, string>> = {
  'sqs:SendMessageBatch': 'sqs:SendMessage',
  'sqs:ChangeMessageVisibilityBatch': 'sqs:ChangeMessageVisibility',
  'sqs:DeleteMessageBatch': 'sqs:DeleteMessage',
};

/**
 * Creating a resource with tags in the same call is also authorized as the service's tagging action
 * (with `<service>:CreateAction` naming the create), so a create whose input takes tags needs both: the
 * adapters tag everything they create in the create call itself.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/supported-iam-actions-tagging.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/tagging-resources-during-creation.html
 */
const TAGGING_ACTION_OF_SERVICE: Readonly<Record<string, string>> = {
  ec2: 'ec2:CreateTags',
  elasticloadbalancing: 'elasticloadbalancing:AddTags',
};
const TAG_INPUT_MEMBERS = ['Tags', 'TagSpecifications'];

/** `XxxCommand` of `@aws-sdk/client-<name>` -> the IAM action, or undefined when it is not an SDK command. */
export function iamActionOfCommand(clientPackage: string, commandName: string): string | undefined {
  const prefix = IAM_PREFIX_OF_CLIENT[clientPackage];
  if (!prefix || !commandName.endsWith('Command')) return undefined;
  const operation = `${prefix}:${commandName.slice(0, -'Command'.length)}`;
  return ACTION_OF_OPERATION[operation] ?? operation;
}

const CLIENT_PACKAGE = /\/node_modules\/@aws-sdk\/(client-[a-z0-9-]+)\//;
const KUBERNETES_CLIENTS = ['/node_modules/@kubernetes/client-node/', '/shared/k8s/rest-api.ts'];
/** client-node generates each API group's class several times (`ObjectCoreV1Api`, `PromiseCoreV1Api`, ...). */
const KUBERNETES_API_CLASS = /^(?:Object|Promise|Observable)?([A-Z][A-Za-z0-9]*Api)$/;

/** One program over every entry, so the checker parses the SDK's type declarations once. */
export function analyzeEntries(repoRoot: string, entries: Readonly<Record<string, string>>): Map<string, CodeUsage> {
  const configPath = resolve(repoRoot, 'tsconfig.json');
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(configPath));
  const roots = Object.values(entries).map((file) => resolve(repoRoot, file));
  const program = ts.createProgram({ rootNames: roots, options: { ...parsed.options, noEmit: true } });
  const checker = program.getTypeChecker();
  const result = new Map<string, CodeUsage>();
  for (const [name, file] of Object.entries(entries)) {
    const source = program.getSourceFile(resolve(repoRoot, file));
    if (!source) throw new Error(`${file}: not found`);
    result.set(name, new Reachability(checker, repoRoot).from(source));
  }
  return result;
}

class Reachability {
  private readonly usage: CodeUsage = {
    awsActions: new Set(),
    interfaceMembers: new Set(),
    kubernetesCalls: new Set(),
  };
  private readonly visited = new Set<ts.Node>();
  private readonly queue: ts.Node[] = [];
  /** Classes the code constructs (`new C`, or `C` referred to as a value). */
  private readonly instantiated = new Set<ts.ClassLikeDeclaration>();
  /** Interface members reached: interface declaration -> member names. */
  private readonly reachedMembers = new Map<ts.InterfaceDeclaration, Set<string>>();

  constructor(
    private readonly checker: ts.TypeChecker,
    private readonly repoRoot: string,
  ) {}

  from(entry: ts.SourceFile): CodeUsage {
    for (const statement of entry.statements) this.enqueue(statement);
    for (let node = this.queue.pop(); node; node = this.queue.pop()) this.walk(node);
    return this.usage;
  }

  private ours(node: ts.Node): boolean {
    const file = node.getSourceFile();
    if (file.isDeclarationFile || file.fileName.includes('/node_modules/')) return false;
    return !relative(this.repoRoot, file.fileName).startsWith('..');
  }

  private enqueue(node: ts.Node): void {
    if (this.visited.has(node)) return;
    this.visited.add(node);
    this.queue.push(node);
  }

  private walk(root: ts.Node): void {
    const visit = (node: ts.Node): void => {
      // Type positions run nothing.
      if (ts.isTypeNode(node) || ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) return;
      if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return;
      if (ts.isNewExpression(node)) this.construct(node);
      if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) this.refer(node);
      // A class is walked only for what runs when it is built; its methods wait until referred to.
      if (ts.isClassLike(node) && node !== root) {
        this.instantiate(node);
        return;
      }
      ts.forEachChild(node, visit);
    };
    if (ts.isClassLike(root)) {
      this.walkClassConstruction(root, visit);
      return;
    }
    visit(root);
  }

  private walkClassConstruction(cls: ts.ClassLikeDeclaration, visit: (node: ts.Node) => void): void {
    for (const clause of cls.heritageClauses ?? []) {
      if (clause.token === ts.SyntaxKind.ExtendsKeyword) for (const t of clause.types) visit(t.expression);
    }
    for (const member of cls.members) {
      if (ts.isConstructorDeclaration(member) || ts.isClassStaticBlockDeclaration(member)) visit(member);
      if (ts.isPropertyDeclaration(member) && member.initializer) visit(member.initializer);
    }
  }

  /** `new XxxCommand(...)` of an SDK client package is an AWS call; any other `new` builds a class. */
  private construct(node: ts.NewExpression): void {
    const symbol = this.checker.getTypeAtLocation(node.expression).getSymbol();
    const declaration = symbol?.declarations?.[0];
    const pkg = declaration?.getSourceFile().fileName.match(CLIENT_PACKAGE)?.[1];
    if (!symbol || !pkg) return;
    const action = iamActionOfCommand(pkg, symbol.getName());
    if (!action) return;
    this.usage.awsActions.add(action);
    const [service = ''] = action.split(':');
    const tagging = TAGGING_ACTION_OF_SERVICE[service];
    const input = node.arguments?.[0];
    if (tagging && action.split(':')[1]?.startsWith('Create') && input) {
      const members =
        this.checker
          .getContextualType(input)
          ?.getProperties()
          .map((p) => p.getName()) ?? [];
      if (TAG_INPUT_MEMBERS.some((m) => members.includes(m))) this.usage.awsActions.add(tagging);
    }
  }

  /** Whatever an identifier names in our code is reached; interface members are recorded as used. */
  private refer(node: ts.Identifier | ts.PrivateIdentifier): void {
    if (ts.isShorthandPropertyAssignment(node.parent) && node.parent.name === node) {
      // `{ handler }` names the property and refers to the variable of that name.
      this.referTo(this.checker.getShorthandAssignmentValueSymbol(node.parent));
    }
    this.referTo(this.checker.getSymbolAtLocation(node));
  }

  private referTo(found: ts.Symbol | undefined): void {
    let symbol = found;
    if (!symbol) return;
    if (symbol.flags & ts.SymbolFlags.Alias) symbol = this.checker.getAliasedSymbol(symbol);
    for (const declaration of symbol.declarations ?? []) {
      this.kubernetesCall(declaration, symbol.getName());
      if (!this.ours(declaration)) continue;
      if (ts.isMethodSignature(declaration) || ts.isPropertySignature(declaration)) {
        const owner = declaration.parent;
        if (ts.isInterfaceDeclaration(owner)) this.reachMember(owner, symbol.getName());
        continue;
      }
      if (ts.isClassLike(declaration)) {
        this.instantiate(declaration);
        continue;
      }
      if (ts.isParameter(declaration) || ts.isTypeParameterDeclaration(declaration)) continue;
      if (ts.isInterfaceDeclaration(declaration) || ts.isTypeAliasDeclaration(declaration)) continue;
      // Functions, methods, accessors, variables (their initializer), enum members, object literal members.
      this.enqueue(declaration);
    }
  }

  /** A method of one of the Kubernetes clients' API classes: one Kubernetes API request. */
  private kubernetesCall(declaration: ts.Declaration, name: string): void {
    const file = declaration.getSourceFile().fileName;
    if (!KUBERNETES_CLIENTS.some((client) => file.includes(client))) return;
    if (!ts.isMethodDeclaration(declaration) && !ts.isMethodSignature(declaration)) return;
    const owner = declaration.parent;
    const ownerName = (ts.isClassLike(owner) || ts.isInterfaceDeclaration(owner)) && owner.name?.text;
    const api = ownerName ? KUBERNETES_API_CLASS.exec(ownerName)?.[1] : undefined;
    if (api) this.usage.kubernetesCalls.add(`${api}.${name}`);
  }

  private instantiate(cls: ts.ClassLikeDeclaration): void {
    if (this.instantiated.has(cls)) return;
    this.instantiated.add(cls);
    this.enqueue(cls);
    for (const [iface, names] of this.reachedMembers) {
      if (this.implementsInterface(cls, iface)) for (const name of names) this.enqueueMember(cls, name);
    }
  }

  private reachMember(iface: ts.InterfaceDeclaration, name: string): void {
    const names = this.reachedMembers.get(iface) ?? new Set<string>();
    if (names.has(name)) return;
    names.add(name);
    this.reachedMembers.set(iface, names);
    this.usage.interfaceMembers.add(`${iface.name.text}.${name}`);
    for (const cls of this.instantiated) if (this.implementsInterface(cls, iface)) this.enqueueMember(cls, name);
  }

  /**
   * Whether `cls` implements `iface`: through its own `implements` clause, an interface there that extends
   * `iface`, or a base class that does (`Ec2Adapter extends Ec2InstanceReads implements Ec2Port`).
   */
  private implementsInterface(cls: ts.ClassLikeDeclaration, iface: ts.InterfaceDeclaration): boolean {
    for (const clause of cls.heritageClauses ?? []) {
      for (const t of clause.types) {
        const declarations = this.declarationsOf(t.expression);
        if (clause.token === ts.SyntaxKind.ImplementsKeyword) {
          if (declarations.some((d) => ts.isInterfaceDeclaration(d) && this.extendsInterface(d, iface))) return true;
        } else if (declarations.some((d) => ts.isClassLike(d) && this.implementsInterface(d, iface))) {
          return true;
        }
      }
    }
    return false;
  }

  /** `sub` is `iface` or extends it, directly or through other interfaces. */
  private extendsInterface(sub: ts.InterfaceDeclaration, iface: ts.InterfaceDeclaration): boolean {
    if (sub === iface) return true;
    for (const clause of sub.heritageClauses ?? []) {
      for (const t of clause.types) {
        const found = this.declarationsOf(t.expression);
        if (found.some((d) => ts.isInterfaceDeclaration(d) && this.extendsInterface(d, iface))) return true;
      }
    }
    return false;
  }

  private declarationsOf(expression: ts.Expression): ts.Declaration[] {
    let symbol = this.checker.getSymbolAtLocation(expression);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = this.checker.getAliasedSymbol(symbol);
    return symbol?.declarations ?? [];
  }

  /** The member of that name, declared by the class or inherited from a base class of ours. */
  private enqueueMember(cls: ts.ClassLikeDeclaration, name: string): void {
    const own = cls.members.filter((m) => m.name && ts.isIdentifier(m.name) && m.name.text === name);
    for (const member of own) this.enqueue(member);
    if (own.length > 0) return;
    for (const clause of cls.heritageClauses ?? []) {
      if (clause.token !== ts.SyntaxKind.ExtendsKeyword) continue;
      for (const t of clause.types) {
        for (const base of this.declarationsOf(t.expression)) if (ts.isClassLike(base)) this.enqueueMember(base, name);
      }
    }
  }
}
