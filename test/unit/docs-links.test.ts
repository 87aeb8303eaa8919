/**
 * The documentation's links hold: every relative link and image in README.md and docs/**\/*.md names a
 * file that exists and, with a `#anchor`, a heading of that file (GitHub's slugs). Code comments cite
 * the docs by path (`docs/design/money.md#sharded-balances`): every such path and anchor exists, and no
 * comment cites the front page by a section title or the design document that is not in the repository.
 */

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

const ROOT = resolve(__dirname, '..', '..');
const CODE_FOLDERS = ['functions', 'lib', 'local', 'bin', 'bench', 'test', 'dashboard', 'client'];
const CODE_EXTENSIONS = ['.ts', '.cts', '.mts', '.js', '.cjs', '.mjs'];
/** Generated from docs/openapi.json, whose text comes from lib/openapi-document.ts (not a comment there). */
const GENERATED = new Set(['client/src/openapi.d.ts']);
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'cdk.out', '.data', 'test-results']);
/**
 * Pages another change generates (the configuration reference, from the environment contract and the
 * CDK context keys): links to them are checked once they exist, and until then only their path is known.
 */
const GENERATED_PAGES = new Set(['docs/guides/configuration.md']);

function filesUnder(folder: string, keep: (name: string) => boolean): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return SKIPPED_FOLDERS.has(name) ? [] : filesUnder(path, keep);
    return keep(name) ? [path] : [];
  });
}

const markdownFiles = [join(ROOT, 'README.md'), ...filesUnder(join(ROOT, 'docs'), (name) => name.endsWith('.md'))];
const codeFiles = CODE_FOLDERS.flatMap((folder) =>
  filesUnder(join(ROOT, folder), (name) => CODE_EXTENSIONS.some((ext) => name.endsWith(ext))),
).filter((path) => !GENERATED.has(relative(ROOT, path)));

/** Markdown text without fenced code blocks, and inline code spans without their links (not links there). */
function withoutCode(markdown: string): string {
  return markdown
    .replace(/^(```|~~~)[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/`([^`\n]*)`/g, (_span, code: string) => (code.includes('](') ? '' : code));
}

/** GitHub's heading slug: lowercase, punctuation dropped (but `-` and `_`), each space a `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a markdown file offers: its headings' slugs, a repeated slug numbered `-1`, `-2`, ... */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of markdown.replace(/^(```|~~~)[\s\S]*?^\1[^\n]*$/gm, '').split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    anchors.add(count === 0 ? base : `${base}-${count}`);
    seen.set(base, count + 1);
  }
  return anchors;
}

interface Link {
  text: string;
  target: string;
}

function linksOf(markdown: string): Link[] {
  const links: Link[] = [];
  for (const match of withoutCode(markdown).matchAll(/!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    links.push({ text: match[0], target: match[2] ?? '' });
  }
  return links;
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** What is wrong with `target` as written in `from` (a path), or undefined when it resolves. */
function problemOf(from: string, target: string): string | undefined {
  const [path = '', anchor] = target.split('#', 2);
  const file = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
  if (!existsSync(file))
    return GENERATED_PAGES.has(relative(ROOT, file)) ? undefined : `no file ${relative(ROOT, file)}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!file.endsWith('.md')) return `an anchor on ${relative(ROOT, file)}, which is not markdown`;
  if (!anchorsOf(readFileSync(file, 'utf8')).has(anchor)) return `no heading #${anchor} in ${relative(ROOT, file)}`;
  return undefined;
}

/** The text of every comment in a TypeScript or JavaScript file, by the compiler's own reading. */
function commentsOf(path: string): { line: number; text: string }[] {
  const text = readFileSync(path, 'utf8');
  const kind = /\.[cm]?js$/.test(path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, kind);
  const ranges = new Map<number, ts.CommentRange>();
  const visit = (node: ts.Node) => {
    for (const range of [
      ...(ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []),
      ...(ts.getTrailingCommentRanges(text, node.getEnd()) ?? []),
    ]) {
      ranges.set(range.pos, range);
    }
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return [...ranges.values()].map((range) => ({
    line: source.getLineAndCharacterOfPosition(range.pos).line + 1,
    text: text.slice(range.pos, range.end),
  }));
}

describe('links in README.md and docs/', () => {
  test('the slug rule matches GitHub on punctuation, code spans and repeated headings', () => {
    // Act
    const anchors = anchorsOf('# A page\n## What `providerInput` may carry\n## Uploads\n### Uploads\n## Uploads\n');

    // Assert
    expect(slug("What LocalStack's free edition does not emulate")).toBe(
      'what-localstacks-free-edition-does-not-emulate',
    );
    expect([...anchors]).toEqual(['a-page', 'what-providerinput-may-carry', 'uploads', 'uploads-1', 'uploads-2']);
  });

  test('the pages are found and their links read', () => {
    // Act
    const links = markdownFiles.flatMap((file) => linksOf(readFileSync(file, 'utf8')));

    // Assert
    expect(markdownFiles.map((file) => relative(ROOT, file))).toEqual(
      expect.arrayContaining(['README.md', 'docs/README.md', 'docs/api/reference.md', 'docs/design/money.md']),
    );
    expect(links.filter((link) => !isExternal(link.target)).length).toBeGreaterThan(100);
  });

  test.each(markdownFiles.map((file) => [relative(ROOT, file), file]))(
    '%s: every relative link and image resolves, anchors included',
    (_name, file) => {
      // Prepare
      const links = linksOf(readFileSync(file, 'utf8')).filter((link) => !isExternal(link.target));

      // Act
      const problems = links.flatMap((link) => {
        const problem = problemOf(file, link.target);
        return problem === undefined ? [] : [`${relative(ROOT, file)}: ${link.text}: ${problem}`];
      });

      // Assert
      expect(problems).toEqual([]);
    },
  );
});

describe('doc paths cited in code comments', () => {
  const comments = codeFiles.flatMap((file) =>
    commentsOf(file).map((comment) => ({ where: `${relative(ROOT, file)}:${comment.line}`, text: comment.text })),
  );

  test('the comments of the code folders are read', () => {
    // Act
    const citing = comments.filter((comment) => /docs\/[\w./-]+\.md/.test(comment.text));

    // Assert
    expect(codeFiles.length).toBeGreaterThan(100);
    expect(citing.length).toBeGreaterThan(30);
  });

  test('every docs/...md path (and #anchor) a comment cites exists', () => {
    // Act
    const problems = comments.flatMap((comment) =>
      [...comment.text.matchAll(/\bdocs\/[\w./-]*[\w-]\.md(?:#[\w-]+)?/g)].flatMap(([cited]) => {
        const problem = problemOf(join(ROOT, 'README.md'), cited);
        return problem === undefined ? [] : [`${comment.where}: ${cited}: ${problem}`];
      }),
    );

    // Assert
    expect(problems).toEqual([]);
  });

  test('no comment cites the front page by a section title, nor the design document that does not exist', () => {
    // Prepare
    const designDocument = ['DESIGN', 'md'].join('.');

    // Act
    const problems = comments.flatMap((comment) => {
      const found: string[] = [];
      if (comment.text.includes(designDocument)) found.push(`${comment.where}: cites ${designDocument}`);
      for (const [cited] of comment.text.matchAll(/README(?!\.md)[^\n]{0,40}/g)) {
        found.push(`${comment.where}: cites the front page by its sections ("${cited}"); cite a docs/...md path`);
      }
      return found;
    });

    // Assert
    expect(problems).toEqual([]);
  });

  test('no cdk-nag reason or other text in lib/ names the design document that does not exist', () => {
    // Prepare
    const designDocument = ['DESIGN', 'md'].join('.');
    const libFiles = codeFiles.filter((file) => relative(ROOT, file).startsWith('lib/'));

    // Act
    const naming = libFiles.filter((file) => readFileSync(file, 'utf8').includes(designDocument));

    // Assert
    expect(naming.map((file) => relative(ROOT, file))).toEqual([]);
  });
});
