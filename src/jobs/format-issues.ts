import type { core } from 'zod';
import type { JobIssue } from './job-error.ts';

type RawIssue = core.$ZodRawIssue;

/**
 * Error map for parsing job definitions: short messages in the user's terms ("must be a positive number",
 * "unknown field; allowed here: ..."). Messages set on a schema itself take precedence.
 */
export function jobErrorMap(iss: RawIssue): string | undefined {
  const input: unknown = iss.input;
  switch (iss.code) {
    case 'invalid_type':
      if (input === undefined) return 'is required';
      if (iss.expected === 'int') return `must be a whole number (got ${describe(input)})`;
      return `must be ${withArticle(iss.expected)} (got ${describe(input)})`;
    case 'too_small': {
      if (iss.origin === 'string') return 'must not be empty';
      if (iss.origin === 'array') return `must hold at least ${String(iss.minimum)} item${iss.minimum === 1 ? '' : 's'}`;
      if (iss.minimum === 0) return iss.inclusive ? 'must not be negative' : 'must be a positive number';
      return `must be at least ${String(iss.minimum)}${iss.inclusive ? '' : ' (exclusive)'}`;
    }
    case 'too_big':
      return `must be at most ${String(iss.maximum)}${iss.inclusive ? '' : ' (exclusive)'}`;
    case 'invalid_value':
      return `must be ${iss.values.map((v) => JSON.stringify(v)).join(' or ')}`;
    case 'unrecognized_keys': {
      const shape = (iss.inst as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod?.def?.shape;
      const allowed = shape ? Object.keys(shape) : [];
      return allowed.length > 0 ? `unknown field; allowed here: ${allowed.join(', ')}` : 'unknown field';
    }
    case 'invalid_union': {
      const u = iss as RawIssue & { discriminator?: string; options?: unknown[] };
      if (u.discriminator !== undefined) {
        const choices = (u.options ?? []).map((o) => JSON.stringify(o)).join(', ');
        const got = isRecord(input) ? input[u.discriminator] : undefined;
        return got === undefined ? `is required: one of ${choices}` : `must be one of ${choices} (got ${describe(got)})`;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** Turns zod issues into one line per bad field; an unknown-field issue names each unknown field. */
export function formatIssues(issues: readonly core.$ZodIssue[]): JobIssue[] {
  const out: JobIssue[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ field: fieldPath([...issue.path, key]), message: issue.message });
    } else {
      const field = fieldPath(issue.path);
      out.push({ field, message: field === '' ? `the job definition ${issue.message}` : issue.message });
    }
  }
  return out;
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
