/**
 * zod schemas of the 200 bodies of api.md, and `validateResponse`, the one check every body passes before
 * anything downstream trusts it (the client on receipt, reprocess on stored bodies).
 *
 * Rules from the spec: every listed member must be present; extra members are kept (the provider adds fields
 * over time); nullable members accept null; members whose non-null type is "not shown" accept any value;
 * credit counters are plain numbers (fractional values occur); members the spec calls integers must be integers.
 */
import * as z from 'zod';
import { OPERATION_PATHS, type CreditCounters, type Operation } from '../spec/types.ts';
import { ApiSchemaError, type SchemaIssue } from './errors.ts';
import { bodyExcerpt, createOutputRedactor } from './redact.ts';
import { OPERATION_METHODS, type ApiCallInfo, type ResponseByOperation } from './types.ts';

const str = z.string();
const int = z.int();
const num = z.number();
const bool = z.boolean();
/** A member whose (non-null) type the spec does not show. */
const notShown = z.unknown();

const address = z.looseObject({
  city: str,
  country: str,
  geographicArea: str.nullable(),
  isPrimary: notShown,
  line1: str,
  line2: notShown,
  postalCode: str,
});

const company = z.looseObject({
  url: str,
  name: str,
  universalName: str,
  type: str,
  objectUrn: int,
  description: str,
  phone: str,
  followers: notShown,
  website: str,
  logo: str,
  cover: notShown,
  tagline: notShown,
  foundedYear: int,
  staff: z.looseObject({ total: int, range: z.looseObject({ start: int, end: int }) }),
  locations: z.looseObject({ headquarter: address, other: z.array(address) }),
  fundingData: notShown,
  specialities: z.array(str).nullable(),
  industries: z.array(str),
  hashtags: z.array(str).nullable(),
  relevancy: z.looseObject({ score: num, value: str }),
});

const credits = { total_credits: num, credits_used: num, credits_remaining: num };

export const similarCompaniesResponseSchema = z.looseObject({
  success: bool,
  message: str,
  data: z.looseObject({ content: z.array(company), number: int, first: bool, empty: bool }),
  page: int,
  num: int,
  ...credits,
});

export const postDetailsResponseSchema = z.looseObject({
  success: bool,
  message: str,
  PostId: str,
  author: z.looseObject({ name: str, headline: str, network_url: str, profile_image: str }),
  post: z.looseObject({
    timestamp: str,
    text_content: str,
    hashtags: z.array(notShown).nullable(),
    post_media_description: str,
    post_media_url: z.array(str),
  }),
  engagement: z.looseObject({ reactions: int, comments_count: int }),
  ...credits,
});

const job = z.looseObject({
  title: str,
  company_name: str,
  company_link: str,
  location: str,
  url: str,
  posted_timestamp: int,
  posted_date: str,
  is_actively_hiring: bool,
  company_logo_url: str,
  description_html: str,
  description: str,
  criteria: z.looseObject({
    'Employment type': str,
    Industries: str,
    'Job function': str,
    'Seniority level': str,
  }),
});

export const searchJobsResponseSchema = z.looseObject({
  success: bool,
  message: str,
  currentPage: int,
  numResults: int,
  results: z.array(job),
  ...credits,
});

/** The schema of each operation's 200 body. */
export const RESPONSE_SCHEMAS = {
  'similar-companies': similarCompaniesResponseSchema,
  'post-details': postDetailsResponseSchema,
  'search-jobs': searchJobsResponseSchema,
} as const satisfies Record<Operation, z.ZodType>;

// Compile-time proof that a validated body really has the shared type, so the cast below is honest.
type Assignable<A extends B, B> = A;
export type _SimilarCompaniesChecked = Assignable<z.output<typeof similarCompaniesResponseSchema>, ResponseByOperation['similar-companies']>;
export type _PostDetailsChecked = Assignable<z.output<typeof postDetailsResponseSchema>, ResponseByOperation['post-details']>;
export type _SearchJobsChecked = Assignable<z.output<typeof searchJobsResponseSchema>, ResponseByOperation['search-jobs']>;

/** Most issues an ApiSchemaError lists. */
const MAX_ISSUES = 10;

/** Where a body came from, when known: the client passes all of it; reprocess may pass nothing. */
export interface ValidationContext {
  call?: ApiCallInfo;
  /** The body text, kept on the error so the body can be stored and re-validated later. */
  raw?: string;
  /** Redacted from the error's excerpt (always) and `raw` (as from a stored body: a real-length token only). */
  secrets?: readonly string[];
}

/**
 * Checks a parsed 200 body against the operation's schema and returns it typed (extra members kept).
 * Throws ApiSchemaError naming the JSON path of each mismatch, e.g. `data.content[3].staff.total: expected
 * integer, received string`.
 */
export function validateResponse<O extends Operation>(
  operation: O,
  body: unknown,
  context: ValidationContext = {},
): ResponseByOperation[O] {
  const result = RESPONSE_SCHEMAS[operation].safeParse(body);
  if (result.success) return result.data as ResponseByOperation[O];
  const all = result.error.issues;
  const issues = all.slice(0, MAX_ISSUES).map((issue) => toSchemaIssue(issue, body));
  if (all.length > issues.length) issues.push({ path: '…', message: `${all.length - issues.length} more not listed` });
  const secrets = context.secrets ?? [];
  // `raw` is archived like any 200 body (raw_responses), so it gets the same redaction as one: a short test
  // token redacted everywhere would mangle the body ("status" -> "s[REDACTED]atus"). The excerpt is a message.
  const raw = createOutputRedactor(secrets)(context.raw ?? safeStringify(body));
  const call = context.call ?? {
    operation,
    method: OPERATION_METHODS[operation],
    path: OPERATION_PATHS[operation],
    status: 200,
    latencyMs: 0,
  };
  throw new ApiSchemaError({ call, bodyExcerpt: bodyExcerpt(raw, secrets) }, issues, raw, creditsOf(body));
}

/** `a.b[3]["Employment type"]` from zod's path segments. */
export function formatJsonPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && /^[A-Za-z_$][\w$]*$/.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out === '' ? '(root)' : out;
}

function toSchemaIssue(issue: z.core.$ZodIssue, body: unknown): SchemaIssue {
  const path = formatJsonPath(issue.path);
  if (issue.code !== 'invalid_type') return { path, message: issue.message };
  const { present, value } = lookup(body, issue.path);
  if (!present) return { path, message: 'required member is missing' };
  const expected = issue.expected === 'int' ? 'integer' : issue.expected;
  // A number too large for a double (1e400) parses as Infinity: "expected number, received number" said nothing.
  const received = typeof value === 'number' && (expected === 'integer' || !Number.isFinite(value)) ? numberText(value) : kindOf(value);
  return { path, message: `expected ${expected}, received ${received}` };
}

function lookup(body: unknown, path: ReadonlyArray<PropertyKey>): { present: boolean; value: unknown } {
  let value = body;
  for (const seg of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, seg)) return { present: false, value: undefined };
    value = (value as Record<PropertyKey, unknown>)[seg];
  }
  return { present: true, value };
}

function numberText(value: number): string {
  return Number.isFinite(value) ? String(value) : `a number too large to represent (read as ${value})`;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function creditsOf(body: unknown): CreditCounters | null {
  if (body === null || typeof body !== 'object') return null;
  const { total_credits, credits_used, credits_remaining } = body as Record<string, unknown>;
  if (!isFiniteNumber(total_credits) || !isFiniteNumber(credits_used) || !isFiniteNumber(credits_remaining)) {
    return null;
  }
  return { total_credits, credits_used, credits_remaining };
}

/** A counter is read only as a finite number: 1e400 parses as Infinity, which no balance can be. */
function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function safeStringify(body: unknown): string {
  try {
    return JSON.stringify(body) ?? String(body);
  } catch {
    return String(body);
  }
}
