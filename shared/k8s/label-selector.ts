import type { LabelSelector } from './types.ts';

/**
 * metav1.LabelSelector against labels: matchLabels and matchExpressions must all hold; `{}` selects everything.
 * https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#resources-that-support-set-based-requirements
 */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>> = {}): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every((e) => {
      const has = e.key in labels;
      if (e.operator === 'Exists') return has;
      if (e.operator === 'DoesNotExist') return !has;
      const inValues = has && (e.values ?? []).includes(labels[e.key]!);
      return e.operator === 'In' ? inValues : !inValues;
    })
  );
}
