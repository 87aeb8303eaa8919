/**
 * Writes the OpenAPI document generated from the code to docs/openapi.json (`npm run openapi`), or with
 * `--check` fails when the committed file differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiDocumentText } from '../lib/openapi-document';

const file = join(__dirname, '..', 'docs', 'openapi.json');
const text = openApiDocumentText();
if (process.argv.includes('--check')) {
  if (readFileSync(file, 'utf8') !== text) {
    console.error('docs/openapi.json is out of date: run npm run openapi');
    process.exit(1);
  }
} else {
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
}
