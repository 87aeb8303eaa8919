/**
 * Renders a function's IAM statements as readable lines, one per statement:
 * `Allow <actions> on <resources>[ if <operator> <key> <values>]`, so a test can pin every function's
 * permissions in a table. Logical ids lose their hash (`<Table.Arn>`), pseudo parameters read
 * `<AWS::Region>`, joins are concatenated.
 */
import type { Statement } from './support';

function renderValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(renderValue).join(',');
  if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (typeof record.Ref === 'string') {
      // Pseudo parameters as cdk-nag prints them (`<AWS::Region>`), logical ids without their hash.
      return record.Ref.startsWith('AWS::') ? `<${record.Ref}>` : `<${record.Ref.replace(/[0-9A-F]{8}$/, '')}>`;
    }
    const getAtt = record['Fn::GetAtt'];
    if (Array.isArray(getAtt)) return `<${String(getAtt[0]).replace(/[0-9A-F]{8}$/, '')}.${String(getAtt[1])}>`;
    const join = record['Fn::Join'];
    if (Array.isArray(join)) {
      const [separator, parts] = join as [string, unknown[]];
      return parts.map(renderValue).join(separator);
    }
  }
  throw new Error(`cannot render ${JSON.stringify(value)}`);
}

function renderCondition(condition: unknown): string {
  if (condition === undefined) return '';
  const parts = Object.entries(condition as Record<string, Record<string, unknown>>).flatMap(([operator, keys]) =>
    Object.entries(keys).map(([key, values]) => `${operator} ${key} ${renderValue(values)}`),
  );
  return ` if ${parts.join(' and ')}`;
}

/** One line per statement (actions sorted), the lines sorted. */
export function statementLines(statements: readonly Statement[]): string[] {
  return statements
    .map((statement) => {
      const actions = (Array.isArray(statement.Action) ? statement.Action : [statement.Action]).slice().sort();
      const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
      return `${statement.Effect} ${actions.join(' ')} on ${resources.map(renderValue).join(' ')}${renderCondition(statement.Condition)}`;
    })
    .sort();
}
