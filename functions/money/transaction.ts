/**
 * A money transaction composed from contributors (docs/design/money.md). Each contributor brings its
 * items (built by store/, with store/'s named conditions) and reads what a failure of its own items'
 * conditions means: a finding. A cancelled transaction's findings are ranked by the transaction's
 * declared precedence (money/precedence.ts), never by an item's position: adding a contributor (the
 * next limit) is one more entry in the list, and no other contributor's reading moves.
 */
import type { CancellationReason } from '../store/errors';
import { cancellationReasons } from '../store/errors';
import type { TransactItem } from '../store/transaction';

/** What one contributor's failed condition means, named by `kind` (the precedence ranks kinds). */
export interface Finding {
  kind: string;
}

/** One part of a money transaction: its items and what a failure of their conditions means. */
export interface Contributor<F extends Finding> {
  /** Who it is (the task, the ledger entry, a balance shard, ...): for the docs and for tracing. */
  name: string;
  /** Its items, in order. */
  items: TransactItem[];
  /**
   * What the cancellation reasons of its own items (in its items' order) mean: a finding, or undefined
   * when nothing of its own failed. Absent for a contributor without a condition.
   */
  read?: (reasons: CancellationReason[]) => F | undefined;
}

/** Contributors put together: the transaction's items, and the reading of its cancellation. */
export interface ComposedTransaction<F extends Finding> {
  items: TransactItem[];
  /**
   * The findings of every contributor (in the order they were composed), or undefined when `error` is
   * not a cancelled transaction.
   */
  findings(error: unknown): F[] | undefined;
}

/** Puts `contributors` into one transaction, in the order given. */
export function compose<F extends Finding>(contributors: ReadonlyArray<Contributor<F>>): ComposedTransaction<F> {
  const items: TransactItem[] = [];
  const spans: Array<{ contributor: Contributor<F>; from: number; to: number }> = [];
  for (const contributor of contributors) {
    spans.push({ contributor, from: items.length, to: items.length + contributor.items.length });
    items.push(...contributor.items);
  }
  return {
    items,
    findings(error) {
      const reasons = cancellationReasons(error);
      if (!reasons) return undefined;
      const findings: F[] = [];
      for (const { contributor, from, to } of spans) {
        const finding = contributor.read?.(reasons.slice(from, to));
        if (finding) findings.push(finding);
      }
      return findings;
    },
  };
}

/**
 * The highest-ranked kind among `findings`, by the declared `precedence` (first wins); undefined when
 * none of them is ranked.
 */
export function decide<K extends string>(
  findings: ReadonlyArray<{ kind: string }>,
  precedence: readonly K[],
): K | undefined {
  return precedence.find((kind) => findings.some((finding) => finding.kind === kind));
}

/** The findings of one kind, in the order of their contributors (two short shards, ...). */
export function ofKind<F extends Finding, K extends F['kind']>(
  findings: readonly F[],
  kind: K,
): Array<Extract<F, { kind: K }>> {
  return findings.filter((finding): finding is Extract<F, { kind: K }> => finding.kind === kind);
}

/** The reason of an item whose condition failed, if any of `reasons` is one. */
export function failedCondition(reasons: readonly CancellationReason[]): CancellationReason | undefined {
  return reasons.find((reason) => reason.Code === 'ConditionalCheckFailed');
}
