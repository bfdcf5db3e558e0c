import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { createDatabase, type Db } from '../../src/db/database.ts';
import { createTestDatabase } from './database.ts';

const root = path.join(import.meta.dirname, '..', '..');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Cli {
  db: Db;
  /** A scratch folder, also the CLI's DATA_DIR and (empty, unless `env` names another) LOCAL_MODEL_DIR. */
  scratch: string;
  /** Runs bin/meterlens.js as an operator would, against the test database, with no reader configured. */
  meterlens(args: string[], env?: Record<string, string>): Promise<Run>;
  /** `--json` output is exactly one JSON object; anything else, or a failure, throws. */
  json(args: string[], env?: Record<string, string>): Promise<Record<string, any>>;
}

/** A fresh database and the CLI pointed at it; both are removed in teardown. */
export async function startCli(t: Test): Promise<Cli> {
  const database = await createTestDatabase();
  const db = createDatabase(database.url, 2);
  const scratch = await mkdtemp(path.join(tmpdir(), 'meterlens-cli-'));
  t.teardown(async () => {
    await db.destroy();
    await database.drop();
    await rm(scratch, { recursive: true, force: true });
  });

  async function meterlens(args: string[], env: Record<string, string> = {}): Promise<Run> {
    // An empty model directory: the local reader has no weights, so the chain is empty.
    const childEnv: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: database.url,
      DATA_DIR: scratch,
      LOCAL_MODEL_DIR: scratch,
      ...env,
    };
    for (const name of ['READER_CHAIN', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY']) delete childEnv[name];
    const child = spawn(process.execPath, [path.join(root, 'bin', 'meterlens.js'), ...args], {
      env: childEnv,
      cwd: root,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { code, stdout, stderr };
  }

  async function json(args: string[], env?: Record<string, string>): Promise<Record<string, any>> {
    const run = await meterlens([...args, '--json'], env);
    if (run.code !== 0) throw new Error(`meterlens ${args.join(' ')} exited with ${run.code}: ${run.stderr}`);
    const lines = run.stdout.trimEnd().split('\n');
    if (lines.length !== 1) throw new Error(`expected one line of JSON, got:\n${run.stdout}`);
    return JSON.parse(lines[0]);
  }

  return { db, scratch, meterlens, json };
}
