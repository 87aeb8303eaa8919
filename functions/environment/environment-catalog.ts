/**
 * Every variable of the environment contract, for the tests, the local stack and the infra check. No
 * function imports this list: it would put every name into every bundle, and the infra test reads the
 * names left in a bundle as the variables that bundle reads.
 */

import type { EnvVar } from './environment';
import * as contract from './environment';

/** A variable of any value type (`format` left out: it takes a value of the variable's own type). */
export type AnyEnvVar = Omit<EnvVar<unknown>, 'format'>;

function isEnvVar(value: unknown): value is AnyEnvVar {
  return typeof value === 'object' && value !== null && 'name' in value && 'setBy' in value && 'parse' in value;
}

/** The contract's variables, in the order the module declares them. */
export const ENVIRONMENT: readonly AnyEnvVar[] = (Object.values(contract) as unknown[]).filter(isEnvVar);

/** The contract's variable of this name, if any. */
export function envVarNamed(name: string): AnyEnvVar | undefined {
  return ENVIRONMENT.find((variable) => variable.name === name);
}
