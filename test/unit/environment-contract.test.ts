/**
 * The environment contract (functions/environment/environment.ts): functions read variables only
 * through it, each variable is declared once with a meaning, and its parsers refuse what they should.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  type Env,
  environmentOf,
  LOG_LEVEL,
  MEDIA_SOURCE_HOSTS,
  PROVIDER_BASE_URL,
  PROVIDER_MAX_SEND_ATTEMPTS,
  PROVIDER_REFRESH_INTERVAL_SECONDS,
  readEnv,
  setting,
  TABLE_NAME,
} from '../../functions/environment/environment';
import { ENVIRONMENT, envVarDoc } from '../../functions/environment/environment-catalog';

const FUNCTIONS = path.resolve(__dirname, '../../functions');
const CONTRACT = path.join(FUNCTIONS, 'environment/environment.ts');

function sourcesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** `file:line: text` of every line in functions/ (the contract module aside) matching `pattern`. */
function linesMatching(pattern: RegExp, allowed: (match: RegExpExecArray) => boolean = () => false): string[] {
  return sourcesUnder(FUNCTIONS)
    .filter((file) => file !== CONTRACT)
    .flatMap((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => {
          // Comments may name variables; only code reads them.
          const code = line.replace(/\/\/.*$/, '').replace(/^\s*\*.*$/, '');
          const found = [...code.matchAll(new RegExp(pattern, 'g'))].filter((match) => !allowed(match));
          return found.length > 0 ? [`${path.relative(FUNCTIONS, file)}:${index + 1}: ${line.trim()}`] : [];
        }),
    );
}

describe('environment contract: functions read only through it', () => {
  test('no function touches process.env, but for the build-time variables spelled for esbuild define', () => {
    // Prepare
    const buildTime = new Set(ENVIRONMENT.filter((v) => v.setBy === 'build').map((v) => v.name));

    // Act
    const offending = linesMatching(/process\.env(?:\.([A-Za-z_][A-Za-z0-9_]*))?/, (match) =>
      buildTime.has(match[1] ?? ''),
    );

    // Assert
    expect(offending).toEqual([]);
  });

  test('no function reads a variable off an environment object by name (env.X, env["X"])', () => {
    // Act
    const offending = linesMatching(/(?<![.\w])env(?:\.[A-Z_][A-Z0-9_]*\b|\[\s*['"`])/);

    // Assert
    expect(offending).toEqual([]);
  });

  test('the scan would find a read: the patterns match the forms they forbid', () => {
    // Prepare
    const forms = ['process.env.TABLE_NAME', "env['TABLE_NAME']", 'env.TABLE_NAME', 'process.env'];

    // Act
    const caught = forms.filter(
      (form) =>
        /process\.env(?:\.([A-Za-z_][A-Za-z0-9_]*))?/.test(form) ||
        /(?<![.\w])env(?:\.[A-Z_][A-Z0-9_]*\b|\[\s*['"`])/.test(form),
    );

    // Assert
    expect(caught).toEqual(forms);
  });
});

describe('environment contract: declarations', () => {
  test('every variable is declared once, under its own name, with a meaning', () => {
    // Prepare
    const source = fs.readFileSync(CONTRACT, 'utf8');

    // Act
    const names = ENVIRONMENT.map((variable) => variable.name);
    // Each constant is declared under its own name, and its meaning (at least a few words) is its entry in
    // the catalog's ENVIRONMENT_DOCS, the source of the configuration reference.
    const documented = (name: string) =>
      new RegExp(`\\nexport const ${name} = /\\* @__PURE__ \\*/ variable\\(\\s*'${name}'`).test(source) &&
      (envVarDoc(name)?.trim().length ?? 0) >= 20;
    const undocumented = names.filter((name) => !documented(name));

    // Assert
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeGreaterThanOrEqual(50);
    expect(undocumented).toEqual([]);
  });
});

describe('environment contract: parsing', () => {
  test('unset and empty read as undefined; a value parses to its type', () => {
    // Prepare
    const env = { TABLE_NAME: 't', PROVIDER_MAX_SEND_ATTEMPTS: '3', MEDIA_SOURCE_HOSTS: 'a.example, ,b.example' };

    // Act
    const read = {
      table: readEnv(TABLE_NAME, env),
      attempts: readEnv(PROVIDER_MAX_SEND_ATTEMPTS, env),
      hosts: readEnv(MEDIA_SOURCE_HOSTS, env),
      level: readEnv(LOG_LEVEL, { LOG_LEVEL: 'WARN' }),
      unset: readEnv(PROVIDER_BASE_URL, {}),
      empty: readEnv(PROVIDER_BASE_URL, { PROVIDER_BASE_URL: '' }),
    };

    // Assert
    expect(read).toEqual({
      table: 't',
      attempts: 3,
      hosts: ['a.example', 'b.example'],
      level: 'warn',
      unset: undefined,
      empty: undefined,
    });
  });

  /** A refused text: the variable's name, how to read it, and the message that must name it. */
  function refused(variable: { name: string }, read: (env: Env) => unknown, text: string, message: RegExp) {
    return { name: variable.name, read: () => read({ [variable.name]: text }), text, message };
  }

  test.each([
    refused(
      PROVIDER_MAX_SEND_ATTEMPTS,
      (env) => readEnv(PROVIDER_MAX_SEND_ATTEMPTS, env),
      '0',
      /from 1 to 100, got "0"/,
    ),
    refused(PROVIDER_MAX_SEND_ATTEMPTS, (env) => readEnv(PROVIDER_MAX_SEND_ATTEMPTS, env), '2.5', /a whole number/),
    refused(
      PROVIDER_REFRESH_INTERVAL_SECONDS,
      (env) => readEnv(PROVIDER_REFRESH_INTERVAL_SECONDS, env),
      '-1',
      /a number of at least 0/,
    ),
    refused(PROVIDER_BASE_URL, (env) => readEnv(PROVIDER_BASE_URL, env), 'provider.example', /an absolute URL/),
    refused(PROVIDER_BASE_URL, (env) => readEnv(PROVIDER_BASE_URL, env), 'ftp://provider.example', /an http\(s\) URL/),
    refused(LOG_LEVEL, (env) => readEnv(LOG_LEVEL, env), 'loud', /one of debug, info, warn, error/),
  ])('$name refuses "$text", naming the variable', ({ name, read, message }) => {
    // Act
    const act = read;

    // Assert
    expect(act).toThrow(message);
    expect(act).toThrow(new RegExp(`^${name} must be`));
  });

  test('environmentOf writes typed settings, leaves undefined ones out, and refuses a value the functions would', () => {
    // Act
    const env = environmentOf(
      setting(TABLE_NAME, 'table'),
      setting(PROVIDER_MAX_SEND_ATTEMPTS, 2),
      setting(MEDIA_SOURCE_HOSTS, ['a.example', 'b.example']),
      setting(PROVIDER_BASE_URL, undefined),
    );
    const refused = () => setting(PROVIDER_MAX_SEND_ATTEMPTS, 0);

    // Assert
    expect(env).toEqual({
      TABLE_NAME: 'table',
      PROVIDER_MAX_SEND_ATTEMPTS: '2',
      MEDIA_SOURCE_HOSTS: 'a.example,b.example',
    });
    expect(refused).toThrow(/PROVIDER_MAX_SEND_ATTEMPTS must be a whole number/);
  });
});
