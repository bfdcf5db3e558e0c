/**
 * docs/configuration.md and docs/.env.example, generated from ENVIRONMENT's descriptions so that each
 * setting is explained once. `npm run docs:config` runs this file to write them; test/config.test.ts
 * fails while either differs from what it generates.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { ENVIRONMENT } from './config.ts';

interface Variable {
  name: string;
  description: string;
  /** The default as a value to assign; undefined when it is not one value. */
  value: string | undefined;
  /** The default as the table states it (markdown). */
  stated: string;
}

/** Each generated file's path in the repository and its text. */
export function configDocs(): Record<string, string> {
  const variables = Object.entries(ENVIRONMENT.properties).map(([name, schema]) => variable(name, schema));
  return { 'docs/configuration.md': configurationPage(variables), 'docs/.env.example': envExample(variables) };
}

/** The variables ENVIRONMENT has no description for, on one line (a table cell, a comment line). */
export function undescribed(): string[] {
  return Object.entries(ENVIRONMENT.properties)
    .filter(([, schema]) => !isDescribed(schema))
    .map(([name]) => name);
}

function isDescribed(schema: TSchema): schema is TSchema & { description: string } {
  return typeof schema.description === 'string' && /^\S.*$/.test(schema.description);
}

function variable(name: string, schema: TSchema): Variable {
  if (!isDescribed(schema)) throw new Error(`${name} has no description on one line in src/config.ts`);
  if ('default' in schema)
    return { name, description: schema.description, value: String(schema.default), stated: `\`${schema.default}\`` };
  if (typeof schema.documentedDefault !== 'string')
    throw new Error(`${name} has neither a default nor a documentedDefault in src/config.ts`);
  return { name, description: schema.description, value: undefined, stated: schema.documentedDefault };
}

function configurationPage(variables: Variable[]): string {
  const rows = variables.map(
    ({ name, stated, description }) => `| \`${name}\` | ${stated} | ${description.replaceAll('|', '\\|')} |`,
  );
  return [
    '# Configuration',
    '',
    'Every setting comes from the environment ([`.env.example`](.env.example) lists them to copy); generated from `src/config.ts` by `npm run docs:config`.',
    '',
    '| Variable | Default | Meaning |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

function envExample(variables: Variable[]): string {
  const header = [
    '# Every variable Meterlens reads, commented out at its default; configuration.md beside this file explains each in full.',
    '# Generated from src/config.ts by `npm run docs:config`. Copy to .env and uncomment what you change:',
    "# `node --env-file=.env src/cli.ts serve`, `docker run --env-file .env …`, or compose's `env_file`.",
  ];
  const entries = variables.map(({ name, description, value, stated }) => {
    const stateDefault = value === undefined && stated !== 'unset' ? ` Default: ${stated}.` : '';
    return `# ${summary(description)}${stateDefault}\n# ${name}=${value ?? ''}`;
  });
  return `${[header.join('\n'), ...entries].join('\n\n')}\n`;
}

/** A description's first sentence: up to its first full stop before a space or the end, but for e.g.'s. */
function summary(description: string): string {
  return /^.*?(?<!\be\.g)\.(?=\s|$)/.exec(description)?.[0] ?? description;
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  const root = path.join(import.meta.dirname, '..');
  for (const [file, text] of Object.entries(configDocs())) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), text);
  }
}
