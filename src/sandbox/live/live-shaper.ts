import type { CompanyRecord, JobRecord } from '../../spec/types.ts';
import type { PostBody } from '../data/posts.ts';
import { isObject, withAbsentMembers } from './absent-members.ts';
import { LIVE_SHAPES, type LiveShape, type SandboxOptions } from '../options.ts';
import { hashFraction } from '../prng.ts';

const SPEC_AUTHOR_URL = 'network_url';

/** The shapes the options turn on, each null when off; null when none is (the spec mode). */
export function liveShapesOf(options: SandboxOptions) {
  const on: readonly LiveShape[] = options.liveShapes === true ? LIVE_SHAPES : options.liveShapes === false ? [] : options.liveShapes;
  if (on.length === 0) return null;
  return {
    absences: on.includes('absent-members') ? { missingRate: options.memberMissingRate, nullRate: options.memberNullRate } : null,
    // The member the author's profile URL is sent under (`acmenet_url`), or null for `network_url`.
    authorUrlMember: on.includes('brand-url') ? `${options.brand}_url` : null,
    // The largest similar-companies page, or null for no cap.
    maxNum: on.includes('page-cap') ? options.maxNum : null,
    // How the records' network URLs are written: on which host, how often bare or on a country subdomain.
    urlForms: on.includes('url-forms')
      ? { host: options.networkHost, bareRate: options.bareUrlRate, countryRate: options.countryUrlRate }
      : null,
  };
}

type LiveShapes = NonNullable<ReturnType<typeof liveShapesOf>>;
type UrlForms = NonNullable<LiveShapes['urlForms']>;

/**
 * Turns the generators' spec-shaped records into shapes the live service may send, each step a no-op while its shape
 * is off. Records are copied where they change, never edited: the generators' records are cached and shared.
 */
export class LiveShaper {
  constructor(private readonly shapes: LiveShapes, private readonly seed: number) {}

  /** The reference URL the data is looked up by: a country or mobile subdomain names the `www.` page. */
  referenceUrl(url: string): string {
    return this.shapes.urlForms ? foldSubdomain(url) : url;
  }

  /** The page size a similar-companies request gets, which its answer echoes. */
  pageSize(num: number): number {
    return this.shapes.maxNum === null ? num : Math.min(num, this.shapes.maxNum);
  }

  /** A company as one list shows it; `listKey` names the list, so its URL form may differ between lists. */
  company(record: CompanyRecord, listKey: string): CompanyRecord {
    const { absences, urlForms } = this.shapes;
    let out = record;
    if (urlForms) out = { ...out, url: rehost(out.url, originFor(urlForms, this.seed, `company:${listKey}:${out.url}`)) };
    if (absences) out = withAbsentMembers(out, 'company', record.universalName, this.seed, absences);
    return out;
  }

  /** A job of a search; its identity `url` keeps its path and is written on `www.` of the brand's host. */
  job(record: JobRecord): JobRecord {
    const { absences, urlForms } = this.shapes;
    let out = record;
    if (urlForms) {
      out = {
        ...out,
        company_link: rehost(out.company_link, originFor(urlForms, this.seed, `company-link:${record.url}`)),
        url: rehost(out.url, `https://www.${urlForms.host}`),
      };
    }
    if (absences) out = withAbsentMembers(out, 'job', record.url, this.seed, absences);
    return out;
  }

  /** Post details; the author's profile URL may change host, go missing, and carry the brand's name. */
  post(body: PostBody): PostBody {
    const { absences, urlForms, authorUrlMember } = this.shapes;
    const postId = String(body.PostId);
    let out = body;
    const author: unknown = body.author;
    if (urlForms && isObject(author) && typeof author[SPEC_AUTHOR_URL] === 'string') {
      const origin = originFor(urlForms, this.seed, `author:${postId}`);
      out = { ...out, author: { ...author, [SPEC_AUTHOR_URL]: rehost(author[SPEC_AUTHOR_URL], origin) } };
    }
    if (absences) out = withAbsentMembers(out, 'post', postId, this.seed, absences);
    const shaped: unknown = out.author;
    if (authorUrlMember && isObject(shaped)) out = { ...out, author: renamed(shaped, SPEC_AUTHOR_URL, authorUrlMember) };
    return out;
  }
}

/** A copy of `object` with member `from` renamed `to` in the same place (absent stays absent). */
function renamed(object: Record<string, unknown>, from: string, to: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).map(([name, value]) => [name === from ? to : name, value]));
}

/** Country subdomains the site serves its pages on (a client must fold them into `www.`). */
const COUNTRY_SUBDOMAINS = ['de', 'fr', 'uk', 'in', 'br', 'es', 'it', 'nl'] as const;

/**
 * The origin one URL is written with (bare, `<cc>.` or `www.`), drawn from seed and `key`: the key names the URL's
 * place in an answer, so a company may be written differently from one list to the next, as live answers are.
 */
function originFor(forms: UrlForms, seed: number, key: string): string {
  const r = hashFraction(seed, `url-form:${key}`);
  if (r < forms.bareRate) return `https://${forms.host}`;
  if (r < forms.bareRate + forms.countryRate) {
    const index = Math.floor(hashFraction(seed, `url-country:${key}`) * COUNTRY_SUBDOMAINS.length);
    return `https://${COUNTRY_SUBDOMAINS[index] ?? 'de'}.${forms.host}`;
  }
  return `https://www.${forms.host}`;
}

/** `url` with its scheme and host replaced by `origin` (the data writes every URL as https://host/path). */
function rehost(url: string, origin: string): string {
  return url.replace(/^https:\/\/[^/]+/, origin);
}

/**
 * A reference URL on a country or mobile subdomain (`de.`, `m.`) rewritten on `www.`, naming the same company as the
 * `www.` and bare forms, as on the live site. Hosts of two labels (`ab.com`) are left alone.
 */
function foldSubdomain(url: string): string {
  return url.replace(/^(\s*(?:[a-z][a-z0-9+.-]*:\/\/)?)(?:[a-z]{2}|m)\.([^/.?#]+\.[^/?#]+)/i, '$1www.$2');
}
