/**
 * Session lifetimes from the environment (`SESSION_IDLE_SECONDS`, `SESSION_ABSOLUTE_SECONDS`), with the
 * defaults of core/session.ts. Read per call: cheap, and tests may change them.
 */
import { SESSION_DEFAULTS } from '../core/session';

export interface SessionSettings {
  idleSeconds: number;
  absoluteSeconds: number;
}

function seconds(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`${name} must be a whole number > 0, got "${raw}"`);
  return value;
}

export function sessionSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): SessionSettings {
  return {
    idleSeconds: seconds(env.SESSION_IDLE_SECONDS, SESSION_DEFAULTS.idleSeconds, 'SESSION_IDLE_SECONDS'),
    absoluteSeconds: seconds(
      env.SESSION_ABSOLUTE_SECONDS,
      SESSION_DEFAULTS.absoluteSeconds,
      'SESSION_ABSOLUTE_SECONDS',
    ),
  };
}
