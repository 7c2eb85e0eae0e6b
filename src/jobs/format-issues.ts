import type { core, z } from 'zod';
import { nearestName } from '../near-name.ts';
import type { JobIssue } from './job-error.ts';

type RawIssue = core.$ZodRawIssue;

/** Error map for job definitions, in the user's terms; messages set on a schema itself take precedence. */
export function jobErrorMap(iss: RawIssue): string | undefined {
  const message = ISSUE_MESSAGES[iss.code] as ((iss: RawIssue) => string | undefined) | undefined;
  return message?.(iss);
}

/** jobErrorMap's message for each code of issue it words; zod's own for the others. */
const ISSUE_MESSAGES: { [C in RawIssue['code']]?: (iss: Extract<RawIssue, { code: C }>) => string | undefined } = {
  invalid_type: (iss) => {
    const input: unknown = iss.input;
    if (input === undefined) return 'is required';
    if (iss.expected === 'int') return `must be a whole number (got ${describe(input)})`;
    return `must be ${withArticle(iss.expected)} (got ${describe(input)})`;
  },
  too_small: (iss) => {
    if (iss.origin === 'string') return 'must not be empty';
    if (iss.origin === 'array') return `must hold at least ${String(iss.minimum)} item${iss.minimum === 1 ? '' : 's'}`;
    if (iss.minimum === 0) return iss.inclusive ? 'must not be negative' : 'must be a positive number';
    return `must be at least ${String(iss.minimum)}${iss.inclusive ? '' : ' (exclusive)'}`;
  },
  too_big: (iss) => `must be at most ${String(iss.maximum)}${iss.inclusive ? '' : ' (exclusive)'}`,
  invalid_value: (iss) => `must be ${iss.values.map((v) => JSON.stringify(v)).join(' or ')}`,
  unrecognized_keys: (iss) => {
    const allowed = fieldsOf(iss.inst as SchemaDef | undefined);
    return allowed.length > 0 ? `unknown field; allowed here: ${allowed.join(', ')}` : 'unknown field; no field is allowed here';
  },
  invalid_union: (iss) => {
    const u = iss as typeof iss & { discriminator?: string; options?: unknown[] };
    if (u.discriminator === undefined) return undefined;
    const choices = (u.options ?? []).map((o) => JSON.stringify(o)).join(', ');
    const got = (iss.input as Record<string, unknown> | null | undefined)?.[u.discriminator];
    return got === undefined ? `is required: one of ${choices}` : `must be one of ${choices} (got ${describe(got)})`;
  },
};

/** What checkJobValue found: the value as the schema outputs it, or one issue per bad field. */
export type JobValueCheck<T> = { success: true; data: T } | { success: false; issues: JobIssue[] };

/** Parses `value` under jobErrorMap into one issue per bad field (an unknown one with a suggestion, else the list). */
export function checkJobValue<T>(schema: z.ZodType<T>, value: unknown): JobValueCheck<T> {
  // A finalized issue no longer holds the object schema, whose fields the suggestions are picked from.
  const objectAt = new Map<string, SchemaDef>();
  const parsed = schema.safeParse(value, {
    error: (iss) => {
      if (iss.code === 'unrecognized_keys') objectAt.set(fieldPath(iss.path ?? []), iss.inst as SchemaDef);
      return jobErrorMap(iss);
    },
  });
  if (parsed.success) return { success: true, data: parsed.data };
  return { success: false, issues: formatIssues(parsed.error.issues, objectAt) };
}

/** One issue per bad field; an unknown one named with the field it likely misspells, or its group when written a level too high. */
function formatIssues(issues: readonly core.$ZodIssue[], objectAt: ReadonlyMap<string, SchemaDef>): JobIssue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== 'unrecognized_keys') {
      const field = fieldPath(issue.path);
      return [{ field, message: field === '' ? `the job definition ${issue.message}` : issue.message }];
    }
    const object = objectAt.get(fieldPath(issue.path));
    return issue.keys.map((key) => ({ field: fieldPath([...issue.path, key]), message: (object && suggestion(key, issue.path, object)) ?? issue.message }));
  });
}

/** An unknown key's likely meaning: a group's field spelt exactly (`retries`) beats a loose match (`num` is two edits from `name`). */
function suggestion(key: string, path: readonly PropertyKey[], object: SchemaDef): string | undefined {
  const groups = groupFields(object);
  const inGroup = (maxEdits?: number): string | undefined => {
    const near = nearestName(key, [...groups.values()].flat(), maxEdits);
    const group = near && [...groups].find(([, fields]) => fields.includes(near))?.[0];
    return group && `unknown field (did you mean "${fieldPath([...path, group, near])}"? it goes inside "${fieldPath([...path, group])}")`;
  };
  const near = nearestName(key, fieldsOf(object));
  return inGroup(0) ?? (near ? `unknown field (did you mean "${near}"?)` : inGroup());
}

/** `rate.requestsPerMinute`, `request.account.location[0]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return value.length > 40 ? `"${value.slice(0, 40)}..."` : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeof value === 'object' ? 'an object' : typeof value;
}

function withArticle(expected: string): string {
  if (expected === 'array') return 'a list';
  if (expected === 'object') return 'an object';
  return `a ${expected}`;
}

/** The object fields of an object schema (its groups), each with the fields it allows. */
function groupFields(object: SchemaDef): Map<string, string[]> {
  const groups = Object.entries(shapeOf(object) ?? {}).map(([name, field]) => [name, fieldsOf(field)] as const);
  return new Map(groups.filter(([, fields]) => fields.length > 0));
}

/** The fields of an object schema, less those declared only to be refused with a reason. */
function fieldsOf(schema: SchemaDef | undefined): string[] {
  const shape = shapeOf(schema);
  return shape ? Object.keys(shape).filter((k) => !isRefusal(shape[k]!)) : [];
}

/** The shape of an object schema, also when it is optional or nullable; undefined for any other schema. */
function shapeOf(schema: SchemaDef | undefined): Record<string, SchemaDef> | undefined {
  const def = schema?._zod?.def;
  if (def?.shape) return def.shape;
  return def?.innerType && (def.type === 'optional' || def.type === 'nullable') ? shapeOf(def.innerType) : undefined;
}

type SchemaDef = { _zod: { def: { type: string; innerType?: SchemaDef; shape?: Record<string, SchemaDef> } } };

/** A `z.never(...).optional()` field: named in the schema only so that setting it says why it cannot be set. */
function isRefusal(schema: SchemaDef): boolean {
  const def = schema._zod.def;
  return def.type === 'never' || (def.type === 'optional' && def.innerType !== undefined && isRefusal(def.innerType));
}
