import type { Argv } from 'yargs';
import { defineCommand, type CommandIO } from '../common-options.ts';
import { withStopSignals } from '../signals.ts';
import { UsageError } from '../../errors.ts';
import { OPERATIONS, type Operation } from '../../spec/types.ts';
import { SANDBOX_DEFAULTS, startSandbox, type LoggedRequest, type SandboxOptionsInput } from '../../sandbox/server.ts';
import { LIVE_SHAPES, PAST_LAST_PAGE_MODES, resolveOptions, type LiveShape, type SandboxOptions } from '../../sandbox/options.ts';

/** Port of `netingest sandbox` when --port is not given (tests use port 0 through the library). */
export const SANDBOX_CLI_PORT = 8787;

const DEFAULT_TOKEN = Object.keys(SANDBOX_DEFAULTS.tokens)[0] ?? 'sandbox-token';

const rate = (describe: string) => `${describe} (rate 0..1)`;

/** The flags that set one sandbox option as given, its default theirs: flag, option, help. */
const PLAIN_FLAGS = [
  ['seed', 'seed', 'seed of the synthetic data and of the fault draws'],
  ['age-days', 'ageDays', 'the world this many days later: staff grown, reactions gained, lookalikes and jobs gone and new'],
  ['retry-after', 'retryAfterSeconds', 'Retry-After seconds sent with 429 (over the minute limit: at least until the window frees)'],
  ['fail-500', 'serverErrorRate', rate('answer 500')],
  ['fail-503', 'unavailableRate', rate('answer 503')],
  ['drop', 'dropRate', rate('close the connection without an answer')],
  ['truncate', 'truncateRate', rate('answer 200 with the JSON cut in half')],
  ['slow', 'slowRate', rate('answer --slow-ms late')],
  ['slow-ms', 'slowMs', 'delay of a slow answer'],
  ['html', 'htmlRate', rate('answer 200 with an HTML error page')],
  ['wrong-shape', 'wrongShapeRate', rate('answer 200 with JSON of the wrong shape')],
  ['huge', 'hugeRate', rate('answer 200 with a huge body')],
  ['huge-bytes', 'hugeBytes', 'size of a huge answer'],
  ['not-found-rate', 'notFoundRate', 'fraction of inputs with no data (404)'],
  ['missing-rate', 'memberMissingRate', 'live: chance an optional member is left out'],
  ['null-rate', 'memberNullRate', 'live: chance an optional member is null'],
  ['brand', 'brand', "live: brand named in the author's URL member (<brand>_url)"],
  ['network-host', 'networkHost', 'live: host of the URLs in the records'],
  ['max-num', 'maxNum', 'live: most companies per similar-companies page'],
  ['bare-url-rate', 'bareUrlRate', 'live: share of record URLs without www.'],
  ['country-url-rate', 'countryUrlRate', 'live: share on a country subdomain (de., fr., ...)'],
  ['balance-route', 'balanceRoute', 'serve GET /v1/api/auth, the free balance check, in every mode (--no-balance-route: 404)'],
] as const satisfies ReadonlyArray<readonly [string, keyof SandboxOptions, string]>;
type PlainFlag = (typeof PLAIN_FLAGS)[number];

/** The parsed flags of `netingest sandbox`: those declared one by one (their types inferred), and PLAIN_FLAGS. */
export type SandboxArgs = (ReturnType<typeof ownFlags> extends Argv<infer A> ? A : never) & { [F in PlainFlag as F[0]]: SandboxOptions[F[1]] } & {
  quiet: boolean;
};

/** The flags that are not a sandbox option as it is, each declared with its own type, help and default. */
function ownFlags(y: Argv) {
  const d = SANDBOX_DEFAULTS;
  return y
    .option('port', { type: 'number', default: SANDBOX_CLI_PORT, describe: 'port on 127.0.0.1 (0 picks a free one)' })
    .option('token', { type: 'string', array: true, default: [DEFAULT_TOKEN], describe: 'accepted bearer token (repeatable)' })
    .option('suspended-token', { type: 'string', array: true, default: [] as string[], describe: 'token answered 403 (repeatable)' })
    .option('credits', { type: 'number', default: d.tokens[DEFAULT_TOKEN] ?? 1_000_000, describe: 'total credits of each token' })
    .option('cost', {
      type: 'string',
      array: true,
      default: [] as string[],
      describe: `credits per 200 answer, as operation=credits (defaults: ${OPERATIONS.map((op) => `${op}=${d.costs[op]}`).join(', ')})`,
    })
    .option('latency-ms', { type: 'string', default: String(d.latencyMs), describe: 'added latency per answer: ms, or min-max' })
    .option('rate-limit', { type: 'number', describe: 'requests per second per token before 429 (default: no limit)' })
    .option('rate-limit-per-minute', {
      type: 'number',
      describe: 'requests per sliding minute per token before 429, as plans are priced (default: no limit)',
    })
    .option('past-last-page', {
      // A string, or yargs reads `404` as a number that no choice equals.
      type: 'string',
      choices: PAST_LAST_PAGE_MODES,
      default: d.pastLastPage,
      describe: 'a page past the end of a list: 404 (uncharged), or empty (200 with an empty page, charged)',
    })
    .option('live', {
      type: 'boolean',
      default: false,
      describe: "answer as the live service may, beyond the API's documented interface: members missing or null, "
        + "author.<brand>_url, similar-companies' num capped at --max-num, www./bare/country URLs",
    })
    .option('live-shape', {
      type: 'string',
      array: true,
      choices: LIVE_SHAPES,
      default: [] as LiveShape[],
      describe: 'turn on only these live-service shapes (repeatable; instead of --live)',
    });
}

function builder(y: Argv) {
  let flags: Argv = ownFlags(y);
  for (const [flag, option, describe] of PLAIN_FLAGS) {
    const value = SANDBOX_DEFAULTS[option];
    flags = flags.option(flag, { type: typeof value as 'number' | 'string' | 'boolean', default: value, describe });
  }
  return flags
    .option('quiet', { type: 'boolean', default: false, describe: 'do not print a line per request' })
    .example('$0 sandbox --rate-limit 5 --fail-503 0.05', 'a flaky, rate-limited local API on port 8787')
    .example('$0 sandbox --rate-limit-per-minute 60', '60 calls a sliding minute, as the plans are priced')
    .example('$0 sandbox --past-last-page empty', 'a page past the end as an empty page, and billed')
    .example('$0 sandbox --live', 'answers shaped as the live service may send them')
    .example('$0 sandbox --live-shape page-cap --max-num 25', 'only the page-size cap of the live service')
    .example('export NETINGEST_API_URL=http://127.0.0.1:8787', 'in another shell: point netingest at it...')
    .example('export NETINGEST_API_TOKEN=sandbox-token', '...with its default token, then netingest run ...') as unknown as Argv<SandboxArgs>;
}

/** Turns the flags into sandbox options; bad values become a UsageError naming the flag. */
export function sandboxOptionsFromArgs(argv: SandboxArgs): SandboxOptionsInput {
  const costs: Partial<Record<Operation, number>> = {};
  for (const spec of argv.cost) {
    const match = /^([a-z-]+)=(\d+(?:\.\d+)?)$/.exec(spec.trim());
    if (!match || !(OPERATIONS as readonly string[]).includes(match[1] ?? '')) {
      throw new UsageError(`--cost ${spec}: expected operation=credits with operation one of ${OPERATIONS.join(', ')}`);
    }
    costs[match[1] as Operation] = Number(match[2]);
  }
  const latency = /^\s*(\d+(?:\.\d+)?)\s*(?:-\s*(\d+(?:\.\d+)?)\s*)?$/.exec(argv['latency-ms']);
  if (!latency) throw new UsageError(`--latency-ms ${argv['latency-ms']}: expected milliseconds or min-max, e.g. 5 or 2-20`);
  const input: SandboxOptionsInput = {
    ...Object.fromEntries(PLAIN_FLAGS.map(([flag, option]) => [option, argv[flag]])),
    host: SANDBOX_DEFAULTS.host,
    port: argv.port,
    tokens: Object.fromEntries(argv.token.map((t) => [t, argv.credits])),
    suspendedTokens: argv['suspended-token'],
    costs,
    latencyMs: latency[2] === undefined ? Number(latency[1]) : [Number(latency[1]), Number(latency[2])],
    rateLimitPerSecond: argv['rate-limit'] ?? null,
    rateLimitPerMinute: argv['rate-limit-per-minute'] ?? null,
    pastLastPage: argv['past-last-page'],
    liveShapes: argv['live-shape'].length > 0 ? argv['live-shape'] : argv.live,
    logRequests: false,
  };
  checkPort(argv.port);
  try {
    resolveOptions(input);
  } catch (err) {
    throw new UsageError(inFlagWords(err instanceof Error ? err.message : String(err)));
  }
  return input;
}

function checkPort(port: number): void {
  if (Number.isInteger(port) && port >= 0 && port <= 65535) return;
  // yargs made a word NaN: not quoted as such.
  throw new UsageError(`--port ${Number.isNaN(port) ? 'is not a number' : port}: expected a whole number from 0 to 65535`);
}

/** The flag that sets each option resolveOptions() may complain of. */
const FLAG_OF_OPTION: Readonly<Record<string, string>> = {
  ...Object.fromEntries(PLAIN_FLAGS.map(([flag, option]) => [option, flag])),
  rateLimitPerSecond: 'rate-limit',
  rateLimitPerMinute: 'rate-limit-per-minute',
  latencyMs: 'latency-ms',
  pastLastPage: 'past-last-page',
  'credits of token': 'credits',
  token: 'token',
};

/**
 * resolveOptions() names the library's options (`sandbox option serverErrorRate`): the user typed flags (`--fail-500`).
 * yargs made a word given to a number flag NaN: say so rather than quote NaN.
 */
function inFlagWords(message: string): string {
  return message
    .replace(/^sandbox (?:option )?/, '')
    .replace(/credits of token|\b[a-z]+[A-Z][a-zA-Z]*\b|^[a-z]+\b/g, (word) => (FLAG_OF_OPTION[word] ? `--${FLAG_OF_OPTION[word]}` : word))
    .replace(/ must be > 0 or null,/, ' must be > 0,')
    .replace(/, got NaN$/, ', got a value that is not a number');
}

/** One line per request; the token is never printed (only the log of the start names it). */
export function formatRequestLine(e: LoggedRequest): string {
  const time = new Date(e.at).toISOString();
  const target = e.rawQuery === '' ? e.path : `${e.path}?${e.rawQuery}`;
  const status = e.status === 0 ? 'dropped' : String(e.status);
  return `${time} ${e.method} ${target} -> ${status}${e.fault ? ` [${e.fault}]` : ''}${e.charged ? ` charged ${e.charged}` : ''}\n`;
}

/** Runs the sandbox until `stop` aborts (the stop signals, or a test's own), printing the URL and tokens first. */
export async function serveSandbox(argv: SandboxArgs, io: CommandIO, stop: AbortSignal): Promise<number> {
  const input = sandboxOptionsFromArgs(argv);
  if (!argv.quiet) input.onRequest = (entry) => io.stdout.write(formatRequestLine(entry));
  const sandbox = await startSandbox(input).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') throw new UsageError(`--port ${argv.port}: the port is already in use`);
    if (err.code === 'EACCES') throw new UsageError(`--port ${argv.port}: not allowed to listen on it`);
    throw err;
  });
  io.stdout.write(`Sandbox API listening on ${sandbox.url}\n`);
  io.stdout.write(`Token: ${argv.token.join(', ')} (${argv.credits} credits each; a local fake token)\n`);
  const live = input.liveShapes === true ? LIVE_SHAPES : input.liveShapes || [];
  if (live.length > 0) io.stdout.write(`Answers shaped as the live service may send them: ${live.join(', ')}\n`);
  if (!stop.aborted) await new Promise<void>((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
  await sandbox.stop();
  io.stdout.write('Sandbox stopped.\n');
  return 0;
}

/** `netingest sandbox`: the local emulator of the API, for trying jobs and for tests, until Ctrl+C. */
export const sandboxCommand = defineCommand<SandboxArgs>({
  builder,
  // The stop signals of every command; nothing to tell on the first (the sandbox says when it has stopped).
  run: (argv, io) => withStopSignals(() => undefined, (stop) => serveSandbox(argv, io, stop)),
});
