/**
 * Answer contracts: what each operation's 200 body must hold and how each member is read. A record without its identity
 * is set aside, alone; any other member missing, `null` or in a lossless variant (`"12"`, `12.0`, `"true"`) is read as
 * NULL or the value and counted as drift. Only a body it cannot read at all is unusable; unnamed members are kept.
 */
import { DriftTally } from './drift.ts';
import { storableValue, TooDeepError } from './storable-text.ts';
import { canonicalUrl, networkHost, otherSiteHost } from '../urls/canonical.ts';

/**
 * How a scalar member is read (`given`: see given()). `int32`: a count or a year, which a 32-bit column holds (PostgreSQL's
 * `integer`); one past it is a garbled value, read as NULL on both engines rather than refused by one.
 */
export type ScalarType = 'string' | 'integer' | 'int32' | 'number' | 'boolean' | 'given';

interface MemberBase {
  /** null is an expected value (the spec marks it nullable), so it is not drift. */
  nullable: boolean;
}

export interface ScalarMember<T extends ScalarType = ScalarType> extends MemberBase {
  kind: 'scalar';
  type: T;
  /** Read only as exactly its type (identity, credit counters): no variant is taken for it. */
  strict: boolean;
  /**
   * When the member is missing, read instead the one other member of the same object whose name matches this
   * and which the contract does not name (the spec's `network_url` arrives as `<brand>_url`). Counted as renamed.
   */
  otherName: RegExp | null;
}

export interface ObjectMember<M extends Members = Members> extends MemberBase { kind: 'object'; members: M }

export interface ArrayMember<E extends Member = Member> extends MemberBase { kind: 'array'; of: E }

export type Member = ScalarMember | ObjectMember | ArrayMember;
export type Members = { readonly [name: string]: Member };

// ---- builders -------------------------------------------------------------------------------------------

const scalar = <T extends ScalarType>(type: T): ScalarMember<T> => ({ kind: 'scalar', type, nullable: false, strict: false, otherName: null });
export const str = () => scalar('string');
export const int = () => scalar('integer');
export const int32 = () => scalar('int32');
export const num = () => scalar('number');
export const bool = () => scalar('boolean');
/** A member whose type the spec does not show: any value is kept as it came, null included. */
export const given = (): ScalarMember<'given'> => ({ ...scalar('given'), nullable: true });
export const obj = <M extends Members>(members: M): ObjectMember<M> => ({ kind: 'object', members, nullable: false });
export const list = <E extends Member>(of: E): ArrayMember<E> => ({ kind: 'array', of, nullable: false });
export const nullable = <M extends Member>(m: M): M => ({ ...m, nullable: true });
export const strict = <M extends ScalarMember>(m: M): M => ({ ...m, strict: true });
export const orOtherName = <M extends ScalarMember>(m: M, pattern: RegExp): M => ({ ...m, otherName: pattern });

/** The credit counters: optional, but only finite numbers are read, never a variant: the credit caps rest on them. */
export const CREDIT_MEMBERS = {
  total_credits: strict(num()),
  credits_used: strict(num()),
  credits_remaining: strict(num()),
};

// ---- the typed result of reading ------------------------------------------------------------------------

type ScalarValue<T> = T extends 'string' ? string : T extends 'integer' | 'int32' | 'number' ? number : T extends 'boolean' ? boolean : unknown;

/** What a member reads as: its type or null (a member the spec never names stays as it came). */
export type Read<M> = M extends ScalarMember<infer T>
  ? ScalarValue<T> | null
  : M extends ObjectMember<infer R>
    ? ReadObject<R> | null
    : M extends ArrayMember<infer E>
      ? Array<Read<E>> | null
      : never;

export type ReadObject<R extends Members> = { [K in keyof R]: Read<R[K]> } & { [extra: string]: unknown };

// ---- the contract of one operation -------------------------------------------------------------------

/**
 * One operation's answer contract: the body's members, where its records are and which member names each. A list sets
 * aside a record without its identity; a single record (post-details) is the body, named against the request.
 */
export interface AnswerContract<R extends Members = Members> {
  body: R;
  /** Path of the record list (`['data', 'content']`), or null when the body is the record. */
  recordsAt: readonly string[] | null;
  /** Member of each listed record that names it (required, a non-empty string). */
  identity: string | null;
  /** For a body that is the record: the members of which at least one must be there for it to be an answer. */
  recordMembers: readonly string[];
}

/** A record left out of an answer because it does not name itself; the rest of its page is stored. */
export interface SetAsideRecord {
  /** 1-based position in its list. */
  position: number;
  /** JSON path of the record, e.g. `data.content[3]`. */
  path: string;
  reason: string;
}

/** Why a body cannot be read at all: where, and how. */
export interface UnusableIssue { path: string; message: string }

/** What reading one body through its contract gives. */
export type Reading<R extends Members> =
  | { usable: true; answer: ReadObject<R>; setAside: SetAsideRecord[]; drift: DriftTally }
  | { usable: false; issue: UnusableIssue };

/** Reads a parsed body through its contract; never throws. */
export function readThrough<R extends Members>(contract: AnswerContract<R>, parsed: unknown): Reading<R> {
  if (!isObject(parsed)) return { usable: false, issue: { path: '(root)', message: `expected object, received ${kindOf(parsed)}` } };
  const drift = new DriftTally();
  // The text rule of both engines (storable-text.ts), applied here so that every writer gets the same values.
  let body: Record<string, unknown>;
  try {
    body = storableValue(parsed, (path, parent, fix) => drift.note(path, parent, 'text', fix)) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof TooDeepError) return { usable: false, issue: { path: err.path, message: err.message } };
    throw err;
  }
  const issue = unusableShape(contract, body);
  if (issue) return { usable: false, issue };
  drift.seen('');
  const answer = readMembers(contract.body, body, '', drift) as ReadObject<R>;
  const setAside = contract.recordsAt ? setAsideNamelessRecords(contract, answer, body, drift) : [];
  return { usable: true, answer, setAside, drift };
}

function unusableShape(contract: AnswerContract, body: Record<string, unknown>): UnusableIssue | null {
  const names = contract.recordsAt;
  if (names) {
    let value: unknown = body;
    for (const [i, name] of names.entries()) {
      if (!isObject(value)) return { path: names.slice(0, i).join('.'), message: `expected object, received ${kindOf(value)}` };
      value = value[name];
    }
    if (!Array.isArray(value)) {
      const message = value === undefined ? 'the record list is missing' : `expected an array of records, received ${kindOf(value)}`;
      return { path: names.join('.'), message };
    }
    return null;
  }
  if (contract.recordMembers.some((name) => body[name] !== undefined && body[name] !== null)) return null;
  return { path: '(root)', message: `none of ${contract.recordMembers.join(', ')} is there` };
}

/**
 * Replaces each listed record that does not name itself by null, in place, so the others keep their positions; counts
 * as `host` drift each one named by another site's page (its rows leave it out: recordsByUrl), said once per path.
 */
function setAsideNamelessRecords(contract: AnswerContract, answer: Record<string, unknown>, body: Record<string, unknown>, drift: DriftTally): SetAsideRecord[] {
  const names = contract.recordsAt!;
  const out: SetAsideRecord[] = [];
  const list = valueAt(answer, names) as unknown[];
  const rawList = valueAt(body, names) as unknown[];
  const id = contract.identity!;
  const host = networkHost();
  const path = `${names.join('.')}[]`;
  for (let i = 0; i < list.length; i++) {
    const value = isObject(list[i]) ? (rawList[i] as Record<string, unknown>)[id] : undefined;
    const reason = isObject(list[i]) ? identityProblem(id, value, host) : `not an object (${kindOf(rawList[i])})`;
    if (reason === null) {
      const other = otherSiteHost(value, host);
      if (other !== null) drift.note(`${path}.${id}`, path, 'host', `${other}, not ${host}`);
      continue;
    }
    list[i] = null;
    out.push({ position: i + 1, path: `${names.join('.')}[${i}]`, reason });
  }
  return out;
}

/** Why a listed record's identity (its page's URL) cannot key it; null when it can. */
function identityProblem(name: string, value: unknown, host: string): string | null {
  if (typeof value === 'string' && value.trim() !== '') {
    // Text that is no page address (`javascript:alert(1)`, `acme`) would key a company or job row of its own.
    const url = canonicalUrl(value, host);
    return url.ok ? null : `${name}: ${url.reason}`;
  }
  if (value === undefined) return `${name} is missing`;
  if (typeof value === 'string') return `${name} is empty`;
  return `${name}: expected string, received ${kindOf(value)}`;
}

// ---- reading members ----------------------------------------------------------------------------------

function join(parent: string, name: string): string {
  return parent === '' ? name : `${parent}.${name}`;
}

function readMembers(members: Members, value: Record<string, unknown>, path: string, drift: DriftTally): Record<string, unknown> {
  const out: Record<string, unknown> = { ...value };
  for (const name of Object.keys(members)) {
    const m = members[name]!;
    const p = join(path, name);
    let v = value[name];
    if (v === undefined) {
      const other = m.kind === 'scalar' && m.otherName ? otherMemberName(members, value, m.otherName) : null;
      if (other === null) {
        drift.note(p, path, 'missing');
        out[name] = null;
        continue;
      }
      drift.note(p, path, 'renamed', join(path, other));
      v = value[other];
    }
    out[name] = readPresent(m, v, p, path, drift);
  }
  return out;
}

/** The one member of `value` matching `pattern` that the contract does not name, or null (none, or several). */
function otherMemberName(members: Members, value: Record<string, unknown>, pattern: RegExp): string | null {
  const found = Object.keys(value).filter((k) => pattern.test(k) && !Object.hasOwn(members, k) && value[k] !== undefined);
  return found.length === 1 ? found[0]! : null;
}

function readPresent(m: Member, v: unknown, path: string, parent: string, drift: DriftTally): unknown {
  if (v === null || v === undefined) {
    if (!m.nullable) drift.note(path, parent, 'null');
    return null;
  }
  switch (m.kind) {
    case 'object':
      if (!isObject(v)) return wrongType(path, parent, v, drift);
      drift.seen(path);
      return readMembers(m.members, v, path, drift);
    case 'array': {
      if (!Array.isArray(v)) return wrongType(path, parent, v, drift);
      const element = `${path}[]`;
      return v.map((e: unknown) => {
        // An object element counts itself as seen when it is read (the denominator of its members).
        if (m.of.kind !== 'object' || e === null || e === undefined) drift.seen(element);
        return readPresent(m.of, e, element, element, drift);
      });
    }
    case 'scalar':
      return readScalar(m, v, path, parent, drift);
  }
}

function readScalar(m: ScalarMember, v: unknown, path: string, parent: string, drift: DriftTally): unknown {
  if (EXACTLY[m.type](v)) return v;
  const variant = m.strict ? undefined : LOSSLESS[m.type](v);
  if (variant === undefined) return wrongType(path, parent, v, drift);
  drift.note(path, parent, 'variant', `${typeof v} read as ${m.type === 'int32' ? 'integer' : m.type}`);
  return variant;
}

function wrongType(path: string, parent: string, v: unknown, drift: DriftTally): null {
  drift.note(path, parent, 'type', kindOf(v));
  return null;
}

/** Per scalar type, whether a value is exactly of it. */
const EXACTLY: Record<ScalarType, (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  integer: (v) => typeof v === 'number' && Number.isSafeInteger(v),
  int32: (v) => typeof v === 'number' && isInt32(v),
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  boolean: (v) => typeof v === 'boolean',
  given: () => true,
};

const INTEGER_TEXT = /^\s*-?\d+(\.0*)?\s*$/;
/** What a 32-bit column (PostgreSQL's `integer`) holds: `int32`'s rule, and copy's for older datasets. */
export const isInt32 = (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31;
const NUMBER_TEXT = /^\s*-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

/** Reads text of `shape` as the number it spells, when `ok` takes that number; undefined otherwise. */
const numberOfText = (shape: RegExp, ok: (n: number) => boolean) => (v: unknown) => {
  const n = typeof v === 'string' && shape.test(v) ? Number(v) : NaN;
  return ok(n) ? n : undefined;
};

/** Per scalar type, another type's value read without loss (`"12"` -> 12, `"true"` -> true); undefined: none. */
const LOSSLESS: Record<ScalarType, (v: unknown) => unknown> = {
  string: (v) => (typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined),
  integer: numberOfText(INTEGER_TEXT, Number.isSafeInteger),
  int32: numberOfText(INTEGER_TEXT, isInt32),
  number: numberOfText(NUMBER_TEXT, Number.isFinite),
  boolean: (v) => (v === 'true' || v === 1 ? true : v === 'false' || v === 0 ? false : undefined),
  given: (v) => v,
};

/** The value at `path` under `value` (a contract's `recordsAt`), or undefined where a step is not an object. */
function valueAt(value: unknown, path: readonly string[]): unknown {
  return path.reduce<unknown>((v, name) => (isObject(v) ? v[name] : undefined), value);
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A value's kind as messages name it: `string`, `number 1.5`, `null`, `array`... */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isFinite(v) ? `number ${v}` : 'a number too large to represent';
  return typeof v;
}
