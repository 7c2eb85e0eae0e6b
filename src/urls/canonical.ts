/**
 * Canonical URLs of companies, posts and jobs: tasks and rows are keyed by them, so one spelling per page. The
 * network's pages take `https://www.<host>/...` (editions folded in); other hosts, ports, credentials and IPs are
 * refused before they cost a call. No query, fragment or trailing slash.
 */
import { ConfigError } from '../errors.ts';
import { DEFAULT_NETWORK_HOST } from '../spec/types.ts';

/** Environment variable naming the network's host (e.g. `example.com`, no scheme, no `www.`). */
export const NETWORK_HOST_ENV = 'NETINGEST_NETWORK_HOST';

const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]$/;

/** The network's host (the one site netingest asks about), lower-case, without `www.`; a ConfigError unless a domain. */
export function networkHost(env: NodeJS.ProcessEnv = process.env): string {
  const raw = env[NETWORK_HOST_ENV]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_NETWORK_HOST;
  const host = raw.toLowerCase().replace(/\.$/, '').replace(/^www\./, '');
  if (!DOMAIN.test(host)) {
    throw new ConfigError(
      `${NETWORK_HOST_ENV} must be a plain domain name such as ${DEFAULT_NETWORK_HOST} (no scheme, path or port); got ${JSON.stringify(raw.slice(0, 100))}.`,
    );
  }
  return host;
}

/** Result of a canonicalization: the URL, or why the input is not one. */
export type CanonicalResult = { ok: true; url: string } | { ok: false; reason: string };

/** One of the canonical forms below, as the operations pick one per column. */
export type Canonicalize = (input: unknown, networkHost: string) => CanonicalResult;

interface ParsedUrl {
  /** Lower-case host as written (`www.` kept), with `:port` when one was given. */
  host: string;
  /** Path segments, as percent-encoded by the URL parser, without empty segments. */
  segments: string[];
}

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
/**
 * The longest page address taken, and the most UTF-8 bytes of any indexed column's text (store/ingest/tables.ts): one
 * PostgreSQL btree entry holds ~2,700 bytes, and a longer value made it refuse the whole group of paid answers.
 */
export const MAX_URL_LENGTH = 2048;
/** Subdomains that are the same site: the web, mobile and country editions. */
const EDITION_LABEL = /^(?:www|m|mobile|[a-z]{2})$/;
/** A percent-encoded control character (`%00` and the like): never part of a real page address. */
const ENCODED_CONTROL = /%(?:[01][0-9a-f]|7f)/i;
/** A post's own id in a path segment: `activity-<digits>`, `urn:li:share:<digits>`, `ugcPost%3A<digits>`... */
const POST_ID = /(?:^|[^a-z]|%3a)(?:activity|share|ugcpost)(?:[-:]|%3a)\d+/i;

/** Whether `host` (lower-case) is the network's site or an edition; exported for the upgrade re-reading stored URLs. */
export function isNetworkHost(host: string, networkHost: string): boolean {
  if (host === networkHost) return true;
  const dot = host.indexOf('.');
  return dot > 0 && host.slice(dot + 1) === networkHost && EDITION_LABEL.test(host.slice(0, dot));
}

/** The host (`www.` dropped) of a URL on another site than the network's, else null: such an answer is drift. */
export function otherSiteHost(input: unknown, networkHost: string): string | null {
  const parsed = parse(input);
  if (!parsed.ok || isNetworkHost(parsed.value.host, networkHost)) return null;
  const { host } = parsed.value;
  return host.startsWith('www.') ? host.slice(4) : host;
}

/** Canonical form of any page URL (path kept as written, case included); the network's pages on `www.`. */
export function canonicalUrl(input: unknown, networkHost: string): CanonicalResult {
  const parsed = parse(input);
  if (!parsed.ok) return parsed;
  const { host, segments } = parsed.value;
  if (isNetworkHost(host, networkHost)) return built(`www.${networkHost}`, segments);
  return built(host.startsWith('www.') ? host.slice(4) : host, segments);
}

/** Canonical company page `https://www.<host>/company/<slug>`, slug lower-cased, sub-pages (`/about`) dropped. */
export function canonicalCompanyUrl(input: unknown, networkHost: string): CanonicalResult {
  const segments = networkPage(input, networkHost, 'company/<name>');
  if (!Array.isArray(segments)) return segments;
  if (segments[0]?.toLowerCase() !== 'company' || segments.length < 2) {
    return refused(`not a company page (expected https://www.${networkHost}/company/<name>)`);
  }
  const slug = lowerSlug(segments[1]!);
  if (typeof slug !== 'string') return slug;
  return built(`www.${networkHost}`, ['company', slug]);
}

/** Canonical post URL, path as written (ids are case-sensitive): under `/posts/`, `/pulse/`, or naming a post id. */
export function canonicalPostUrl(input: unknown, networkHost: string): CanonicalResult {
  const segments = networkPage(input, networkHost, 'posts/...');
  if (!Array.isArray(segments)) return segments;
  const first = segments[0]?.toLowerCase();
  const isPost = ((first === 'posts' || first === 'pulse') && segments.length >= 2) || segments.some((s) => POST_ID.test(s));
  if (!isPost) {
    const expected = `https://www.${networkHost}/posts/... or a URL naming an activity, share or ugcPost id`;
    return refused(`not a post (expected ${expected}; a profile's activity feed is not a post)`);
  }
  return built(`www.${networkHost}`, segments);
}

/** Canonical job listing URL: `https://www.<host>/jobs/view/<id-or-slug>`, anything after the listing dropped. */
export function canonicalJobUrl(input: unknown, networkHost: string): CanonicalResult {
  const segments = networkPage(input, networkHost, 'jobs/view/<id>');
  if (!Array.isArray(segments)) return segments;
  if (segments[0]?.toLowerCase() !== 'jobs' || segments[1]?.toLowerCase() !== 'view' || segments.length < 3) {
    return refused(`not a job listing (expected https://www.${networkHost}/jobs/view/<id>)`);
  }
  return built(`www.${networkHost}`, ['jobs', 'view', segments[2]!]);
}

/** The path segments of a page on the network's site, or why the input is not one. */
function networkPage(input: unknown, networkHost: string, example: string): string[] | Refusal {
  const parsed = parse(input);
  if (!parsed.ok) return parsed;
  const { host, segments } = parsed.value;
  if (isNetworkHost(host, networkHost)) return segments;
  // An internationalized host that merely looks like the network's is named as such.
  const lookAlike = host.split('.').some((label) => label.startsWith('xn--')) ? ', an internationalized look-alike' : '';
  return refused(`not on ${networkHost} (host ${host}${lookAlike}; expected https://www.${networkHost}/${example})`);
}

/** Plain-ASCII URLs read without the costly WHATWG parser, only where it gives the same (no IP, port, credentials, `%`, `\`, dot segment, `xn--`). */
const FAST_SHAPE = /^(?:https?:\/\/)?((?:[a-z0-9-]+\.)+[a-z][a-z0-9-]*)((?:\/[\w~:.@!$&'()*+,;=-]*)*)(?:[?#]\S*)?$/i;
const DOT_SEGMENT = /(?:^|\/)\.\.?(?:\/|$)/;
const PLAIN_SLUG = /^[a-z0-9_.~-]+$/i;
let fastPathEnabled = true;

/** For tests: runs `fn` with the fast path off, so its results can be compared with the parser's. */
export function withoutFastPath<T>(fn: () => T): T {
  const was = fastPathEnabled;
  fastPathEnabled = false;
  try {
    return fn();
  } finally {
    fastPathEnabled = was;
  }
}

/** Host and segments of a common-shape URL, or undefined when only the full parser can tell (tests compare the two). */
export function parseFast(input: string): ParsedUrl | undefined {
  if (input.length > MAX_URL_LENGTH) return undefined;
  const m = FAST_SHAPE.exec(input);
  if (m === null) return undefined;
  const host = m[1]!.toLowerCase();
  if (host.includes('xn--')) return undefined;
  const path = m[2]!;
  if (path.includes('.') && DOT_SEGMENT.test(path)) return undefined;
  // The path starts with `/` when not empty; empty segments are dropped as in the parser path.
  const segments: string[] = [];
  for (let from = 1; from < path.length; ) {
    let to = path.indexOf('/', from);
    if (to === -1) to = path.length;
    if (to > from) segments.push(path.slice(from, to));
    from = to + 1;
  }
  return { host, segments };
}

type Parsed = { ok: true; value: ParsedUrl } | Refusal;
type Refusal = { ok: false; reason: string };
const refused = (reason: string): Refusal => ({ ok: false, reason });

function parse(input: unknown): Parsed {
  if (fastPathEnabled && typeof input === 'string') {
    const fast = parseFast(input);
    if (fast !== undefined) return { ok: true, value: fast };
  }
  const text = checkText(input);
  if (typeof text !== 'string') return text;
  const url = parseWebUrl(text);
  if (!(url instanceof URL)) return url;
  const host = checkHost(url);
  if (typeof host !== 'string') return host;
  if (ENCODED_CONTROL.test(url.pathname)) return refused('not a URL (holds a control character such as %00)');
  // One spelling of percent-escapes (the parser keeps `%c3` and `%C3` apart).
  const segments = url.pathname
    .split('/')
    .filter((s) => s !== '')
    .map((s) => s.replace(/%[0-9a-f]{2}/gi, (e) => e.toUpperCase()));
  return { ok: true, value: { host: url.port === '' ? host : `${host}:${url.port}`, segments } };
}

/** The input trimmed, when it is text that may be a URL. */
function checkText(input: unknown): string | Refusal {
  if (typeof input !== 'string') return refused('not a URL (not text)');
  const trimmed = input.trim();
  if (trimmed === '') return refused('empty');
  if (trimmed.length > MAX_URL_LENGTH) return refused(`longer than ${MAX_URL_LENGTH} characters`);
  if (/\s/.test(trimmed)) return refused('not a URL (contains spaces)');
  return trimmed;
}

/** The text parsed as an http(s) URL, https when it names no scheme. */
function parseWebUrl(trimmed: string): URL | Refusal {
  const scheme = SCHEME.exec(trimmed)?.[1]?.toLowerCase();
  if (scheme !== undefined && scheme !== 'http' && scheme !== 'https') {
    return refused(`not a web address (scheme ${scheme}:)`);
  }
  try {
    return new URL(scheme === undefined ? `https://${trimmed.replace(/^\/\//, '')}` : trimmed);
  } catch {
    return refused('not a URL');
  }
}

/** The URL's host, lower-case, without a trailing dot, when it is a domain name with no credentials. */
function checkHost(url: URL): string | Refusal {
  if (url.username !== '' || url.password !== '') return refused('wrong host shape (has credentials)');
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (host.startsWith('[') || /^[\d.]+$/.test(host)) {
    return refused(`wrong host shape (${host} is an IP address, expected a domain)`);
  }
  if (!host.includes('.') || host.startsWith('.') || host.includes('..')) {
    return refused(`wrong host shape (${host || 'no host'}; expected a domain such as network.com)`);
  }
  return host;
}

/** The canonical URL, refused past MAX_URL_LENGTH once percent-encoded (700 CJK characters are 6,300). */
function built(host: string, segments: readonly string[]): CanonicalResult {
  const url = segments.length === 0 ? `https://${host}` : `https://${host}/${segments.join('/')}`;
  return url.length <= MAX_URL_LENGTH ? { ok: true, url } : refused(`longer than ${MAX_URL_LENGTH} characters once percent-encoded`);
}

/** Lower-cases a percent-encoded slug by its decoded text, re-encoding it the one way. */
function lowerSlug(segment: string): string | Refusal {
  // Characters that neither decoding nor encodeURIComponent changes: lower-casing is all there is to do.
  if (fastPathEnabled && PLAIN_SLUG.test(segment)) return segment.toLowerCase();
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return refused('company name in the URL is not valid percent-encoding');
  }
  // `acme%2F..` decodes fine, but to a path (here with a dot segment) that a server may resolve to another page.
  if (decoded.includes('/')) return refused(`company name in the URL holds an encoded slash (%2F): it reads as the path "${decoded}", not one name`);
  return encodeURIComponent(decoded.toLowerCase());
}

/** A post URL's `post_id` (`activity-<digits>`, as the API's `PostId`), or null: one rule for ingest and enrich. */
export function postIdOfUrl(url: string): string | null {
  const digits = /activity(?:[-:]|%3A)(\d+)/i.exec(url)?.[1];
  return digits === undefined ? null : `activity-${digits}`;
}

/** An answer's `PostId` in postIdOfUrl's form, so the two compare; other text kept trimmed, null past MAX_URL_LENGTH bytes (no PostgreSQL key). */
export function postIdOfAnswer(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (text === '' || Buffer.byteLength(text) > MAX_URL_LENGTH) return null;
  if (/^\d+$/.test(text)) return `activity-${text}`;
  return postIdOfUrl(text) ?? text;
}
