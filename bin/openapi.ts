/**
 * Writes the OpenAPI document generated from the code to docs/openapi.json and the typed client's
 * types generated from it to client/src/openapi.d.ts (`npm run openapi`); with `--check`, fails when
 * either committed file differs.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiDocumentText } from '../contract/openapi-document';

const ROOT = join(__dirname, '..');
const DOCUMENT = join(ROOT, 'docs', 'openapi.json');
const CLIENT_TYPES = join(ROOT, 'client', 'src', 'openapi.d.ts');

/** The client types openapi-typescript makes of the committed document (it is an ES module CLI). */
export function clientTypesText(): string {
  return execFileSync(process.execPath, [join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), DOCUMENT], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
}

if (require.main === module) {
  const check = process.argv.includes('--check');
  const document = openApiDocumentText();
  if (check) {
    if (readFileSync(DOCUMENT, 'utf8') !== document || readFileSync(CLIENT_TYPES, 'utf8') !== clientTypesText()) {
      console.error('docs/openapi.json or client/src/openapi.d.ts is out of date: run npm run openapi');
      process.exit(1);
    }
  } else {
    writeFileSync(DOCUMENT, document);
    writeFileSync(CLIENT_TYPES, clientTypesText());
    console.log(`wrote ${DOCUMENT} and ${CLIENT_TYPES}`);
  }
}
