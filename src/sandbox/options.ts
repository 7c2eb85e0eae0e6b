import { DEFAULT_NETWORK_HOST, type Operation } from '../spec/types.ts';
import { FAULTS, type FaultRates } from './faults.ts';
import type { LoggedRequest } from './server.ts';

/** How a page past the end of a list is answered: the spec's 404, or a 200 carrying an empty page. */
export const PAST_LAST_PAGE_MODES = ['404', 'empty'] as const;

/**
 * How live answers differ from api.md, each on by `liveShapes`: 'absent-members' (optional members left out or `null`,
 * never an identity), 'brand-url' (`author.<brand>_url` for `author.network_url`), 'page-cap' (similar-companies
 * pages capped at `maxNum`, echoed as `num`), 'url-forms' (hosts `www.`, bare or `de.`; `de.`/`m.` references fold).
 */
export const LIVE_SHAPES = ['absent-members', 'brand-url', 'page-cap', 'url-forms'] as const;
export type LiveShape = (typeof LIVE_SHAPES)[number];

/** What startSandbox accepts: any subset of the options; `costs` may name only some operations. */
export type SandboxOptionsInput = Partial<Omit<SandboxOptions, 'costs'>> & { costs?: Partial<Record<Operation, number>> };

/**
 * Only 200s are charged, at `costs[operation]` (no 4xx; no fault but slowRate's); 402 comes before the lookup when credits
 * are below the cost. Faults: one seeded draw per authenticated valid request, so each keeps its rate while rates sum <= 1.
 */
const DEFAULTS = {
  /** Interface to listen on; loopback only by default. */
  host: '127.0.0.1',
  /** 0 picks a free port (tests); the CLI defaults to 8787. */
  port: 0,
  /** Seeds the synthetic data and the fault, latency draws: the same seed and requests give the same run. */
  seed: 42,
  /**
   * The world this many days after the seed's (0..3650): companies grown, posts with more reactions, lookalikes and
   * job results gone and new. Start with 1, then 2, to see what a nightly run records; 0 is the seed's world exactly.
   */
  ageDays: 0,
  /** Known bearer tokens and their total credits. */
  tokens: { 'sandbox-token': 1_000_000 } as Record<string, number>,
  /** Tokens answered 403 (account suspended); they need not appear in `tokens`. */
  suspendedTokens: [] as string[],
  /** Credits charged per 200 answer, by operation; fractional costs are kept exact (integer micro-credits). */
  // `satisfies` first: an operation without a cost fails to compile instead of charging `undefined`.
  costs: { 'similar-companies': 1, 'post-details': 1, 'search-jobs': 0.25 } satisfies Record<Operation, number> as Record<Operation, number>,
  /** Added delay per answer: a fixed number of ms or a [min, max] range drawn from the seeded PRNG. */
  latencyMs: 0 as number | [number, number],
  /** Accepted requests per token in any sliding 1-second window; null means no limit. Over it: 429. */
  rateLimitPerSecond: null as number | null,
  /** Accepted requests per token in any sliding 60 s window (the provider plans' unit); null: none. Over it: 429. */
  rateLimitPerMinute: null as number | null,
  /** Retry-After (whole seconds) on 429; over the minute limit, the longer wait until the window admits one again. */
  retryAfterSeconds: 1,
  /**
   * A page past the end: '404' (as the spec shows) or 'empty', a 200 with an empty page, charged (the spec frees only a
   * lookup finding nothing; a client paying for pages it did not need should see it). An input with no data: 404s.
   */
  pastLastPage: '404' as (typeof PAST_LAST_PAGE_MODES)[number],
  /** 500 with a JSON error body. */
  serverErrorRate: 0,
  /** 503 with a JSON error body. */
  unavailableRate: 0,
  /** The socket is destroyed without an answer (logged with status 0). */
  dropRate: 0,
  /** 200 whose JSON body is cut in half. */
  truncateRate: 0,
  /** The normal answer, sent `slowMs` late. The only fault that is charged: the answer itself is complete. */
  slowRate: 0,
  /** How late a slow answer is sent. */
  slowMs: 2000,
  /** 200 with an HTML error page (as a proxy in front of a service would send). */
  htmlRate: 0,
  /** 200 with valid JSON of the wrong shape. */
  wrongShapeRate: 0,
  /** 200 with a body of `hugeBytes` bytes. */
  hugeRate: 0,
  /** Size of a huge answer: 20 MiB. */
  hugeBytes: 20 * 1024 * 1024,
  /** Share of inputs with no data (404), by a hash of seed and input, so stable; an input with `notfound` never has. */
  notFoundRate: 0.05,
  /** false: to the letter of api.md; true: every LIVE_SHAPES entry on; a list: only those. The options below tune each shape while on. */
  liveShapes: false as boolean | readonly LiveShape[],
  /** 'absent-members': chance that an optional member of a record is left out, per record and member. */
  memberMissingRate: 0.05,
  /** 'absent-members': chance that it is sent as `null` instead (on top of the missing rate). */
  memberNullRate: 0.05,
  /** 'brand-url': the made-up brand whose name the author's URL member carries (`acmenet_url`). */
  brand: 'acmenet',
  /** 'url-forms': the host URLs are written on (`https://www.<host>/`), the client's default: no setting needed. */
  networkHost: DEFAULT_NETWORK_HOST,
  /** 'page-cap': the most companies a similar-companies page holds; a larger `num` is answered with this one. */
  maxNum: 25,
  /** 'url-forms': share of company url, company_link and author URLs written without `www.`. */
  bareUrlRate: 0.2,
  /** 'url-forms': share written on a country subdomain (`de.`, `fr.`, ...); the rest carry `www.`. */
  countryUrlRate: 0.15,
  /** Serve `GET /v1/api/auth` in every mode: never charged or faulted, but behind auth and rate limit; false: 404. */
  balanceRoute: true,
  /** Keep a log of every request in `sandbox.requests`; turn off for benchmarks. */
  logRequests: true,
  /** Called once per request once its answer is decided, logged or not; the command line prints its lines from here. */
  onRequest: null as ((entry: LoggedRequest) => void) | null,
} satisfies FaultRates & Record<string, unknown>;
export const SANDBOX_DEFAULTS: Readonly<SandboxOptions> = Object.freeze(DEFAULTS);

/** Every option of the sandbox: SANDBOX_DEFAULTS says what each means. */
export type SandboxOptions = typeof DEFAULTS;

const RATE_KEYS = [...FAULTS.map(([, key]) => key), 'notFoundRate', 'memberMissingRate', 'memberNullRate', 'bareUrlRate', 'countryUrlRate'] as const;

const limitOrNull = (v: number | null) => v === null || v > 0;

/** Options of a form of their own: the check, and what the value must be (`sandbox <option> <must>, got <value>`). */
const CHECKS: { [K in keyof SandboxOptions]?: [ok: (value: SandboxOptions[K]) => boolean, must: string] } = {
  // Seeds are mixed in as 32-bit integers: NaN (`--seed abc`) or a fraction would silently be another seed.
  seed: [Number.isSafeInteger, 'must be a whole number'],
  ageDays: [(v) => Number.isSafeInteger(v) && v >= 0 && v <= 3650, 'must be a whole number from 0 to 3650'],
  latencyMs: [(v) => (Array.isArray(v) ? v[0] >= 0 && v[1] >= v[0] : v >= 0), 'must be >= 0 (or a [min, max] range)'],
  rateLimitPerSecond: [limitOrNull, 'must be > 0 or null'],
  rateLimitPerMinute: [limitOrNull, 'must be > 0 or null'],
  pastLastPage: [(v) => PAST_LAST_PAGE_MODES.includes(v), `must be one of ${PAST_LAST_PAGE_MODES.join(', ')}`],
  retryAfterSeconds: [(v) => v >= 0 && Number.isInteger(v), 'must be a whole number >= 0'],
  // The brand names a JSON member (`<brand>_url`) and the host goes into every URL: keep both plain.
  brand: [(v) => /^[a-z][a-z0-9]*$/.test(v), 'must be lower-case letters and digits'],
  networkHost: [(v) => /^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(v) && !v.startsWith('www.'), `must be a bare host name such as ${DEFAULT_NETWORK_HOST}`],
  maxNum: [(v) => Number.isSafeInteger(v) && v >= 1, 'must be a whole number >= 1'],
  slowMs: [(v) => v >= 0, 'must be >= 0'],
  hugeBytes: [(v) => v >= 0, 'must be >= 0'],
};

/** Merges the input over the defaults and rejects values that make no sense. */
export function resolveOptions(input: SandboxOptionsInput = {}): SandboxOptions {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  const options: SandboxOptions = {
    ...SANDBOX_DEFAULTS,
    ...defined,
    tokens: { ...(input.tokens ?? SANDBOX_DEFAULTS.tokens) },
    suspendedTokens: [...(input.suspendedTokens ?? SANDBOX_DEFAULTS.suspendedTokens)],
    liveShapes: Array.isArray(input.liveShapes) ? [...input.liveShapes] : (input.liveShapes ?? SANDBOX_DEFAULTS.liveShapes),
    costs: { ...SANDBOX_DEFAULTS.costs, ...input.costs },
  } as SandboxOptions;
  for (const key of Object.keys(CHECKS) as Array<keyof SandboxOptions>) {
    const [ok, must] = CHECKS[key] as [(value: unknown) => boolean, string];
    if (!ok(options[key])) throw new RangeError(`sandbox ${key} ${must}, got ${String(options[key])}`);
  }
  checkDrawOptions(options);
  checkLiveOptions(options);
  return options;
}

/** The rates drawn against, the costs and the tokens' credits. */
function checkDrawOptions(options: SandboxOptions): void {
  for (const key of RATE_KEYS) {
    const rate = options[key];
    if (!(rate >= 0 && rate <= 1)) throw new RangeError(`sandbox option ${key} must be between 0 and 1, got ${rate}`);
  }
  for (const [op, cost] of Object.entries(options.costs)) {
    if (!(cost >= 0 && Number.isFinite(cost))) throw new RangeError(`sandbox cost of ${op} must be >= 0, got ${cost}`);
  }
  for (const [token, total] of Object.entries(options.tokens)) {
    if (!(total >= 0 && Number.isFinite(total))) throw new RangeError(`sandbox credits of token must be >= 0, got ${total}`);
    if (token === '') throw new RangeError('sandbox token must not be empty');
  }
}

/** The live-service options: shapes known, rates that add up. */
function checkLiveOptions(options: SandboxOptions): void {
  const { liveShapes } = options;
  if (typeof liveShapes !== 'boolean') {
    if (!Array.isArray(liveShapes)) throw new RangeError(`sandbox liveShapes must be true, false or a list, got ${String(liveShapes)}`);
    for (const shape of liveShapes) {
      if (!(LIVE_SHAPES as readonly string[]).includes(shape)) {
        throw new RangeError(`sandbox live shape ${String(shape)} is unknown; expected one of ${LIVE_SHAPES.join(', ')}`);
      }
    }
  }
  for (const [a, b] of [['memberMissingRate', 'memberNullRate'], ['bareUrlRate', 'countryUrlRate']] as const) {
    if (options[a] + options[b] > 1) throw new RangeError(`sandbox ${a} and ${b} must add up to at most 1`);
  }
}
