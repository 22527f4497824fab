import type { Action, RuleCondition as SdkCondition, Rule as SdkRule } from '@aws-sdk/client-elastic-load-balancing-v2';
import type { RuleAction, RuleCondition } from '../../elbv2-port.ts';

/**
 * Rules, conditions and actions in the SDK's output shapes, as ELBv2 answers them: host-header and path-pattern
 * conditions state their values twice (the legacy `Values` and the field's config); a forward to one group states
 * it both as `TargetGroupArn` and as a `ForwardConfig` of one group with weight 1; actions carry their `Order`.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Rule.html
 */

export function sdkCondition(condition: RuleCondition): SdkCondition {
  switch (condition.field) {
    case 'host-header':
      return {
        Field: condition.field,
        Values: [...condition.values],
        HostHeaderConfig: { Values: [...condition.values] },
      };
    case 'path-pattern':
      return {
        Field: condition.field,
        Values: [...condition.values],
        PathPatternConfig: { Values: [...condition.values] },
      };
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
          Values: condition.values.map((p) => ({ ...(p.key !== undefined ? { Key: p.key } : {}), Value: p.value })),
        },
      };
  }
}

export function sdkAction(action: RuleAction, index: number): Action {
  const Order = index + 1;
  switch (action.type) {
    case 'forward': {
      const single = action.targetGroups.length === 1 ? { TargetGroupArn: action.targetGroups[0]!.arn } : {};
      return {
        Type: 'forward',
        Order,
        ...single,
        ForwardConfig: {
          TargetGroups: action.targetGroups.map((g) => ({ TargetGroupArn: g.arn, Weight: g.weight })),
          TargetGroupStickinessConfig: action.stickiness.enabled
            ? { Enabled: true, DurationSeconds: action.stickiness.durationSeconds }
            : { Enabled: false },
        },
      };
    }
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
          Protocol: action.protocol,
          Port: action.port,
          Host: action.host,
          Path: action.path,
          Query: action.query,
          StatusCode: action.statusCode,
        },
      };
  }
}

export function sdkRule(rule: {
  arn: string;
  priority: number | 'default';
  conditions: readonly RuleCondition[];
  actions: readonly RuleAction[];
}): SdkRule {
  return {
    RuleArn: rule.arn,
    Priority: String(rule.priority),
    Conditions: rule.conditions.map(sdkCondition),
    Actions: rule.actions.map(sdkAction),
    IsDefault: rule.priority === 'default',
  };
}
