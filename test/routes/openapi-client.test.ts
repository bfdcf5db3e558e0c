import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';
import t from 'tap';
import ts from 'typescript';
import { createCustomer, startTestService } from '../helpers/service.ts';

const run = promisify(execFile);
const root = path.join(import.meta.dirname, '../..');
const FIELD_APP = path.join(import.meta.dirname, 'openapi-client', 'field-app.ts');
const PHOTO = path.join(root, 'examples', 'meter.jpg');

/** The file parts of a multipart body as a browser or Node sends them (openapi-typescript's Blob recipe). */
const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier('Blob'));

t.test(
  'a client generated from /openapi.json type-checks a field app, which then reads a photo through it',
  async (t) => {
    const service = await startTestService(t);
    const customer = await createCustomer(service.db);
    const source = await (await fetch(`${service.url}/openapi.json`)).text();

    const problems = await lintFromString({
      source,
      absoluteRef: 'openapi.json',
      config: await createConfig({ extends: ['recommended'] }),
    });
    t.same(
      problems.map((problem) => `${problem.ruleId} at ${problem.location[0]?.pointer}: ${problem.message}`),
      [],
      "Redocly's recommended rules find nothing",
    );

    const types = astToString(
      await openapiTS(source, { transform: (schema) => (schema.format === 'binary' ? BLOB : undefined) }),
    );
    const folder = await mkdtemp(path.join(tmpdir(), 'meterlens-client-'));
    t.teardown(() => rm(folder, { recursive: true, force: true }));
    await writeFile(path.join(folder, 'meterlens-api.ts'), types);
    await copyFile(FIELD_APP, path.join(folder, 'field-app.ts'));
    await symlink(path.join(root, 'node_modules'), path.join(folder, 'node_modules'));
    await writeFile(path.join(folder, 'package.json'), '{"type": "module"}\n');
    const { compilerOptions } = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile).config;
    await writeFile(
      path.join(folder, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { ...compilerOptions, rootDir: '.', noUncheckedIndexedAccess: true },
        files: ['field-app.ts'],
      }),
    );

    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await run(process.execPath, [tsc, '-p', folder]).catch((error) => error);
    t.equal(checked.stdout, '', 'the field app type-checks against the generated client');
    t.same(casts(await readFile(FIELD_APP, 'utf8')), [], 'and needs no casts');

    const { stdout } = await run(
      process.execPath,
      [path.join(folder, 'field-app.ts'), service.url, customer.key, PHOTO],
      { cwd: folder },
    );
    const outcome = JSON.parse(stdout);
    t.match(outcome, { readNow: '02390.276', readLater: '02390.276', correctedTo: '02390.300', refusal: [String] });
    t.equal(outcome.history.length, 2, 'both submissions of the meter, a page at a time');
  },
);

/** The type assertions, non-null assertions, `any`s and `@ts-` directives in a TypeScript source. */
function casts(source: string): string[] {
  const file = ts.createSourceFile('field-app.ts', source, ts.ScriptTarget.Latest, true);
  const found: string[] = [...source.matchAll(/@ts-\w+/g)].map(([directive]) => directive);
  const visit = (node: ts.Node): void => {
    const isCast =
      ts.isAsExpression(node) ||
      ts.isTypeAssertionExpression(node) ||
      ts.isNonNullExpression(node) ||
      node.kind === ts.SyntaxKind.AnyKeyword;
    if (isCast) found.push(node.getText(file));
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}
