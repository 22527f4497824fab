import type { Action, RuleCondition as SdkCondition, Rule as SdkRule } from '@aws-sdk/client-elastic-load-balancing-v2';
import type { QueryStringPair, Rule, RuleAction, RuleCondition, WeightedTargetGroup } from './elbv2-port.ts';

/**
 * Listener rules, their conditions and actions, between the port's normal form (elbv2-port.ts) and the SDK's
 * shapes, for Elbv2Adapter. Requests use the per-field configs (`HostHeaderConfig`, `ForwardConfig`...), never
 * the legacy `Values` / `TargetGroupArn` members; answers are read from the configs first, the legacy members only
 * when a config is missing, so a rule reads the same whichever form created it (no churn from normalisation).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RuleCondition.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Action.html
 */

export function toSdkCondition(condition: RuleCondition): SdkCondition {
  switch (condition.field) {
    case 'host-header':
      return { Field: condition.field, HostHeaderConfig: { Values: [...condition.values] } };
    case 'path-pattern':
      return { Field: condition.field, PathPatternConfig: { Values: [...condition.values] } };
    case 'http-request-method':
      return { Field: condition.field, HttpRequestMethodConfig: { Values: [...condition.values] } };
    case 'source-ip':
      return { Field: condition.field, SourceIpConfig: { Values: [...condition.values] } };
    case 'http-header':
      return {
        Field: condition.field,
        HttpHeaderConfig: { HttpHeaderName: condition.headerName, Values: [...condition.values] },
      };
    case 'query-string':
      return {
        Field: condition.field,
        QueryStringConfig: {
          Values: condition.values.map((pair) => ({
            ...(pair.key !== undefined ? { Key: pair.key } : {}),
            Value: pair.value,
          })),
        },
      };
  }
}

/** Undefined for a condition this port does not model. */
export function fromSdkCondition(sdk: SdkCondition): RuleCondition | undefined {
  const legacy = sdk.Values ?? [];
  switch (sdk.Field) {
    case 'host-header':
      return { field: sdk.Field, values: [...(sdk.HostHeaderConfig?.Values ?? legacy)] };
    case 'path-pattern':
      return { field: sdk.Field, values: [...(sdk.PathPatternConfig?.Values ?? legacy)] };
    case 'http-request-method':
      return { field: sdk.Field, values: [...(sdk.HttpRequestMethodConfig?.Values ?? [])] };
    case 'source-ip':
      return { field: sdk.Field, values: [...(sdk.SourceIpConfig?.Values ?? [])] };
    case 'http-header':
      return {
        field: sdk.Field,
        headerName: sdk.HttpHeaderConfig?.HttpHeaderName ?? '',
        values: [...(sdk.HttpHeaderConfig?.Values ?? [])],
      };
    case 'query-string':
      return {
        field: sdk.Field,
        values: (sdk.QueryStringConfig?.Values ?? []).map(
          (pair): QueryStringPair => ({
            ...(pair.Key !== undefined ? { key: pair.Key } : {}),
            value: pair.Value ?? '',
          }),
        ),
      };
    default:
      return undefined;
  }
}

/** `Order` 1, 2... in list order: AWS performs the actions of a rule by Order. */
export function toSdkAction(action: RuleAction, index: number): Action {
  const Order = index + 1;
  switch (action.type) {
    case 'forward':
      return {
        Type: 'forward',
        Order,
        ForwardConfig: {
          TargetGroups: action.targetGroups.map((g) => ({ TargetGroupArn: g.arn, Weight: g.weight })),
          TargetGroupStickinessConfig: {
            Enabled: action.stickiness.enabled,
            ...(action.stickiness.durationSeconds !== undefined
              ? { DurationSeconds: action.stickiness.durationSeconds }
              : {}),
          },
        },
      };
    case 'fixed-response':
      return {
        Type: 'fixed-response',
        Order,
        FixedResponseConfig: {
          StatusCode: action.statusCode,
          ...(action.contentType !== undefined ? { ContentType: action.contentType } : {}),
          ...(action.messageBody !== undefined ? { MessageBody: action.messageBody } : {}),
        },
      };
    case 'redirect':
      return {
        Type: 'redirect',
        Order,
        RedirectConfig: {
          StatusCode: action.statusCode,
          Protocol: action.protocol,
          Host: action.host,
          Port: action.port,
          Path: action.path,
          Query: action.query,
        },
      };
  }
}

/** Undefined for an action this port does not model (authenticate-oidc, authenticate-cognito). */
export function fromSdkAction(sdk: Action): RuleAction | undefined {
  switch (sdk.Type) {
    case 'forward': {
      const listed = sdk.ForwardConfig?.TargetGroups ?? [];
      const targetGroups: WeightedTargetGroup[] =
        listed.length > 0
          ? listed.flatMap((g) => (g.TargetGroupArn ? [{ arn: g.TargetGroupArn, weight: g.Weight ?? 1 }] : []))
          : sdk.TargetGroupArn
            ? [{ arn: sdk.TargetGroupArn, weight: 1 }]
            : [];
      const sticky = sdk.ForwardConfig?.TargetGroupStickinessConfig;
      return {
        type: 'forward',
        targetGroups,
        stickiness: {
          enabled: sticky?.Enabled === true,
          ...(sticky?.Enabled && sticky.DurationSeconds !== undefined
            ? { durationSeconds: sticky.DurationSeconds }
            : {}),
        },
      };
    }
    case 'fixed-response': {
      const config = sdk.FixedResponseConfig;
      return {
        type: 'fixed-response',
        statusCode: config?.StatusCode ?? '',
        ...(config?.ContentType !== undefined ? { contentType: config.ContentType } : {}),
        ...(config?.MessageBody !== undefined ? { messageBody: config.MessageBody } : {}),
      };
    }
    case 'redirect': {
      const config = sdk.RedirectConfig;
      return {
        type: 'redirect',
        statusCode: config?.StatusCode === 'HTTP_301' ? 'HTTP_301' : 'HTTP_302',
        protocol: config?.Protocol ?? '#{protocol}',
        host: config?.Host ?? '#{host}',
        port: config?.Port ?? '#{port}',
        path: config?.Path ?? '/#{path}',
        query: config?.Query ?? '#{query}',
      };
    }
    default:
      return undefined;
  }
}

/** The actions of a rule or a listener, in the order AWS performs them. */
export function fromSdkActions(actions: readonly Action[] | undefined): RuleAction[] {
  return [...(actions ?? [])]
    .sort((a, b) => (a.Order ?? 0) - (b.Order ?? 0))
    .flatMap((action) => fromSdkAction(action) ?? []);
}

export function toRule(sdk: SdkRule): Rule | undefined {
  if (!sdk.RuleArn) return undefined;
  const isDefault = sdk.IsDefault === true || sdk.Priority === 'default';
  return {
    arn: sdk.RuleArn,
    priority: isDefault ? 'default' : Number(sdk.Priority),
    isDefault,
    conditions: (sdk.Conditions ?? []).flatMap((c) => fromSdkCondition(c) ?? []),
    actions: fromSdkActions(sdk.Actions),
  };
}

/** Priority order, the default rule last. */
export function byPriority(a: Rule, b: Rule): number {
  const rank = (rule: Rule) => (rule.priority === 'default' ? Number.POSITIVE_INFINITY : rule.priority);
  return rank(a) - rank(b);
}
