import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

const NAMED = new Map<string, TSchema>();

/**
 * Names schemas of the API, each by its `$id`: Fastify shares them with every route (plugins/external/
 * openapi.ts adds them), and /openapi.json has each once, in components.schemas. A module names its
 * own at its top level, so that they are named before the app is built; one used by ref() but not
 * named here fails the app's start ("Cannot resolve ref").
 */
export function named(...schemas: TSchema[]): void {
  for (const schema of schemas) {
    const id = idOf(schema);
    if (NAMED.has(id) && NAMED.get(id) !== schema) throw new Error(`two schemas are named ${id}`);
    NAMED.set(id, schema);
  }
}

/**
 * A use of a named schema: `{"$ref": "<$id>"}`, typed as the schema, so that a generated client gets
 * one type per name. `options` are the keywords of this use (a response's `description` and `headers`).
 */
export function ref<T extends TSchema>(schema: T, options: object = {}): TUnsafe<Static<T>> {
  return Type.Unsafe<Static<T>>({ $ref: idOf(schema), ...options });
}

/** Where /openapi.json has a named schema, for the parts of it written by hand (webhooks, refusals). */
export function componentPointer(schema: TSchema): string {
  return `#/components/schemas/${idOf(schema)}`;
}

/** Every named schema, for Fastify's addSchema. */
export function namedSchemas(): TSchema[] {
  return [...NAMED.values()];
}

function idOf(schema: TSchema): string {
  if (!schema.$id) throw new Error(`a schema without an $id cannot be named: ${JSON.stringify(schema).slice(0, 80)}`);
  return schema.$id;
}
