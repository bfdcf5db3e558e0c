/**
 * Every repository path the docs name (docs/*.md, README.md) exists, so that a file moved or renamed is followed
 * by the sentence that points at it. A path is a word that starts with one of the repository's top folders
 * (`src/pipeline/read.ts`, `sql/`); a glob (`test/**\/*.test.ts`) must match something; an example with a
 * placeholder in it (`sql/0NN_name.sql`, `ml/splits/NAME-val.txt`, `…`) and an output that .gitignore keeps out
 * of the repository (`test/screenshots/`) are passed over.
 */
import { existsSync, globSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';

const root = path.join(import.meta.dirname, '..', '..');
const TOP_FOLDERS = ['src', 'test', 'sql', 'bench', 'ml', 'ops', 'examples', 'models', 'bin', 'docs'];
/** A top folder at the start of a word (not inside a URL or another path), then the path's characters. */
const PATH = new RegExp(`(?<![\\w./-])(?:${TOP_FOLDERS.join('|')})/[\\w.*/<>{}…-]*`, 'g');
/** A word that stands for a name the reader fills in. */
const PLACEHOLDER = /…|\.\.\.|[<{]|(?<![A-Za-z])(?:N+|NAME|DIR|FILE|ID)(?![A-Za-z])/;

function docFiles(): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join('docs', name));
  return ['README.md', ...docs.sort()];
}

/** The folders .gitignore names: what a run writes, which a fresh checkout does not have. */
function ignoredFolders(): string[] {
  return readFileSync(path.join(root, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.endsWith('/') && !line.startsWith('#'));
}

/** The paths `text` names, each once, without the sentence's punctuation after it. */
function namedPaths(text: string): string[] {
  return [...new Set([...text.matchAll(PATH)].map(([word]) => word.replace(/[.,:;]+$/, '')))];
}

function exists(named: string): boolean {
  return named.includes('*') ? globSync(named, { cwd: root }).length > 0 : existsSync(path.join(root, named));
}

t.test('namedPaths finds the paths in prose, code and links, and nothing inside URLs', async (t) => {
  t.same(
    namedPaths(
      'See `src/pipeline/read.ts`, then [x](../src/cli.ts) and sql/032_submissions.sql. Run test/**/*.test.ts;\n' +
        'GET http://localhost:3000/docs/ or /api/src/x, and src/config.ts: again src/config.ts',
    ),
    ['src/pipeline/read.ts', 'sql/032_submissions.sql', 'test/**/*.test.ts', 'src/config.ts'],
  );
  t.ok(PLACEHOLDER.test('sql/0NN_name.sql'));
  t.ok(PLACEHOLDER.test('ml/splits/NAME-val.txt'));
  t.notOk(PLACEHOLDER.test('models/MODEL_CARD.md'));
});

t.test('every path the docs name exists', async (t) => {
  const ignored = ignoredFolders();
  for (const file of docFiles()) {
    const missing = namedPaths(readFileSync(path.join(root, file), 'utf8')).filter(
      (named) => !exists(named) && !PLACEHOLDER.test(named) && !ignored.some((folder) => named.startsWith(folder)),
    );
    t.same(missing, [], `${file} names only paths that exist`);
  }
});

/** A pointer from code to a section of a document: `ml/README.md, "Your own fleet"` (a comma or a colon between). */
const SECTION_POINTER = /((?:[\w-]+\/)*[\w-]+\.md)[,:] "([^"]+)"/g;

/** The headings of a markdown file, without their `#`s. */
function headings(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/^#+ (.+)$/gm)].map(([, heading]) => heading.trim());
}

t.test('every section the code points to is a heading of its document', async (t) => {
  const sources = globSync('{src,bench,ml,test}/**/*.{ts,py,sh}', { cwd: root });
  const pointers = sources.flatMap((source) =>
    [...readFileSync(path.join(root, source), 'utf8').matchAll(SECTION_POINTER)].map(([, file, section]) => ({
      source,
      file: file!,
      // A pointer may run over two comment lines: the line break and the next line's comment marks are one space.
      section: section!.replace(/\s*\n\s*(?:\*|\/\/|#)?\s*/g, ' ').replace(/^#+ /, ''),
    })),
  );
  t.ok(pointers.length > 20, `found ${pointers.length} pointers`);
  const broken = pointers.filter(({ file, section }) => {
    const document = [file, path.join('docs', file)].map((name) => path.join(root, name)).find(existsSync);
    return !document || !headings(document).some((heading) => heading.includes(section));
  });
  t.same(broken, [], 'each names a document that exists and one of its headings');
});
