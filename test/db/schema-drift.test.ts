/**
 * sql/ is the schema's source of truth and src/db/schema.ts copies it by hand for Kysely. This test
 * migrates a database and compares every table and column with the `Database` interface: names,
 * nullability, and a coarse type (what pg returns for the column). It fails naming each mismatch.
 */
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import ts from 'typescript';
import { createTestDatabase } from '../helpers/database.ts';

/** What pg hands back for each PostgreSQL type (udt_name; bigint and numeric come as strings). */
const JS_TYPE_OF_COLUMN: Record<string, string> = {
  text: 'string',
  varchar: 'string',
  bpchar: 'string',
  uuid: 'string',
  inet: 'string',
  int8: 'string',
  numeric: 'string',
  int4: 'number',
  int2: 'number',
  float4: 'number',
  float8: 'number',
  bool: 'boolean',
  timestamptz: 'Date',
  timestamp: 'Date',
  // src/db/database.ts parses date as its 'YYYY-MM-DD' text.
  date: 'string',
  bytea: 'Buffer',
  jsonb: 'json',
  json: 'json',
};

/** A column TypeScript types as `unknown` (a JSON document) may hold anything, null too. */
const ANYTHING = 'unknown';

interface ColumnShape {
  type: string;
  nullable: boolean;
}

type Tables = Map<string, Map<string, ColumnShape>>;

t.test('src/db/schema.ts describes exactly the tables and columns the migrations create', async (t) => {
  const database = await createTestDatabase();
  t.teardown(database.drop);

  const [migrated, declared] = [await migratedTables(database.url), declaredTables()];
  const mismatches: string[] = [];
  for (const table of union(migrated.keys(), declared.keys())) {
    const inDatabase = migrated.get(table);
    const inTypes = declared.get(table);
    if (!inDatabase) mismatches.push(`${table}: in Database (schema.ts), not in the migrated database`);
    if (!inTypes) mismatches.push(`${table}: in the migrated database, not in Database (schema.ts)`);
    if (!inDatabase || !inTypes) continue;
    for (const column of union(inDatabase.keys(), inTypes.keys())) {
      const sql = inDatabase.get(column);
      const typescript = inTypes.get(column);
      if (!sql) mismatches.push(`${table}.${column}: in schema.ts, not in the database`);
      else if (!typescript) mismatches.push(`${table}.${column}: in the database, not in schema.ts`);
      else {
        if (typescript.type === ANYTHING) continue;
        if (sql.nullable !== typescript.nullable)
          mismatches.push(
            `${table}.${column}: ${sql.nullable ? 'nullable' : 'NOT NULL'} in SQL, ${typescript.nullable ? 'nullable' : 'not nullable'} in schema.ts`,
          );
        if (sql.type !== 'json' && sql.type !== typescript.type)
          mismatches.push(`${table}.${column}: pg returns ${sql.type}, schema.ts says ${typescript.type}`);
      }
    }
  }
  t.same(mismatches, [], 'no drift between sql/ and src/db/schema.ts');
  t.ok(declared.size > 10, 'the Database interface was found and read');
});

async function migratedTables(url: string): Promise<Tables> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{
      table_name: string;
      column_name: string;
      udt_name: string;
      is_nullable: 'YES' | 'NO';
    }>(
      `SELECT table_name, column_name, udt_name, is_nullable
         FROM information_schema.columns
         JOIN information_schema.tables USING (table_catalog, table_schema, table_name)
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'`,
    );
    const tables: Tables = new Map();
    for (const row of rows) {
      // Array types are named after their element with a leading underscore: _int4 is integer[].
      const element = row.udt_name.replace(/^_/, '');
      const type = `${JS_TYPE_OF_COLUMN[element] ?? `unmapped PostgreSQL type ${element}`}${element === row.udt_name ? '' : '[]'}`;
      columnsOf(tables, row.table_name).set(row.column_name, { type, nullable: row.is_nullable === 'YES' });
    }
    return tables;
  } finally {
    await client.end();
  }
}

/** Reads the `Database` interface with the TypeScript compiler: each column's selected type. */
function declaredTables(): Tables {
  const schemaFile = path.join(import.meta.dirname, '..', '..', 'src', 'db', 'schema.ts');
  const program = ts.createProgram([schemaFile], {
    strict: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const databaseInterface = program
    .getSourceFile(schemaFile)!
    .statements.find((statement) => ts.isInterfaceDeclaration(statement) && statement.name.text === 'Database')!;
  const tables: Tables = new Map();
  for (const table of checker.getTypeAtLocation(databaseInterface).getProperties()) {
    for (const column of checker.getTypeOfSymbol(table).getProperties()) {
      const members = selectedMembers(checker, checker.getTypeOfSymbol(column));
      const nullable = members.some((member) => member.flags & ts.TypeFlags.Null);
      columnsOf(tables, table.name).set(column.name, { type: coarseType(checker, members), nullable });
    }
  }
  return tables;
}

/**
 * The members of the type Kysely selects: ColumnType<Select, Insert, Update> (and Generated<T>)
 * keep it in `__select__`, also as one member of a union (`IdRef | null`).
 */
function selectedMembers(checker: ts.TypeChecker, type: ts.Type): ts.Type[] {
  return (type.isUnion() ? type.types : [type]).flatMap((member) => {
    const select = member.getProperty('__select__');
    const selected = select ? checker.getTypeOfSymbol(select) : member;
    return selected.isUnion() ? selected.types : [selected];
  });
}

/** string, number, boolean, Date, Buffer, unknown or an array of one of them, as pg would return it. */
function coarseType(checker: ts.TypeChecker, members: ts.Type[]): string {
  const coarse = members
    .filter((member) => !(member.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined)))
    .map((member) => {
      if (checker.isArrayType(member))
        return `${coarseType(checker, selectedMembers(checker, checker.getTypeArguments(member as ts.TypeReference)[0]))}[]`;
      if (member.flags & ts.TypeFlags.StringLike) return 'string';
      if (member.flags & ts.TypeFlags.NumberLike) return 'number';
      if (member.flags & ts.TypeFlags.BooleanLike) return 'boolean';
      return checker.typeToString(member).replace(/<.*>$/, '');
    });
  return [...new Set(coarse)].sort().join(' | ');
}

function columnsOf(tables: Tables, table: string): Map<string, ColumnShape> {
  let columns = tables.get(table);
  if (!columns) {
    columns = new Map();
    tables.set(table, columns);
  }
  return columns;
}

function union<T>(first: Iterable<T>, second: Iterable<T>): T[] {
  return [...new Set([...first, ...second])].sort();
}
