/**
 * Session lifetimes from the environment (`SESSION_IDLE_SECONDS`, `SESSION_ABSOLUTE_SECONDS`), with the
 * defaults of core/session.ts. Read per call: cheap, and tests may change them.
 */

import { SESSION_DEFAULTS } from '../core/session';
import { type Env, readEnv, SESSION_ABSOLUTE_SECONDS, SESSION_IDLE_SECONDS } from '../environment/environment';

export interface SessionSettings {
  idleSeconds: number;
  absoluteSeconds: number;
}

export function sessionSettingsFromEnv(env?: Env): SessionSettings {
  return {
    idleSeconds: readEnv(SESSION_IDLE_SECONDS, env) ?? SESSION_DEFAULTS.idleSeconds,
    absoluteSeconds: readEnv(SESSION_ABSOLUTE_SECONDS, env) ?? SESSION_DEFAULTS.absoluteSeconds,
  };
}
