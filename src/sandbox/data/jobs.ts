import { SEARCH_JOBS_LIST_PARAMS, SEARCH_JOBS_PARAMS, type JobRecord } from '../../spec/types.ts';
import { Prng, hash32, hashFraction } from '../prng.ts';
import { BoundedCache, saysNotFound, slugify } from './canonical.ts';
import { daysBefore, isoDate, SeededData } from './world-age.ts';
import {
  EMPLOYMENT_TYPES, INDUSTRIES, JOB_FUNCTIONS, JOB_PERKS, JOB_TITLES, MEDIA_ORIGIN, NAME_CORES, NAME_PREFIXES,
  NETWORK_ORIGIN, PLACES, POST_SENTENCES, SENIORITY_LEVELS, WORKPLACE_SUFFIXES,
} from './words.ts';

/** The search parameters that select results (every parameter but `start`), decoded. */
export type JobSearch = Partial<Record<(typeof SEARCH_JOBS_PARAMS)[number], string>>;

const LIST_PARAMS: ReadonlySet<string> = new Set(SEARCH_JOBS_LIST_PARAMS);
const MAX_DAYS_BY_TIME_POSTED: Record<string, number> = { past_24hrs: 1, past_week: 7, past_month: 30 };

/** A canonical text of a search: parameter order, list order, case and blanks do not matter. */
export function searchKey(search: JobSearch): string {
  const parts: string[] = [];
  for (const name of SEARCH_JOBS_PARAMS) {
    if (name === 'start') continue;
    const raw = search[name];
    if (raw === undefined) continue;
    let value = raw.trim().toLowerCase().replace(/\s+/g, ' ');
    if (LIST_PARAMS.has(name)) value = value.split(',').map((v) => v.trim()).filter(Boolean).sort().join(',');
    if (value !== '') parts.push(`${name}=${value}`);
  }
  return parts.join('&');
}

/** Generates (and caches) job-search result lists from a seed. */
export class JobData extends SeededData {
  private readonly results = new BoundedCache<string, JobRecord[] | null>(5_000);

  /** All results of a search (1..60), or null when it finds nothing. */
  search(search: JobSearch): JobRecord[] | null {
    const key = searchKey(search);
    return this.results.get(key, () => {
      const nodata =
        Object.values(search).some((v) => v !== undefined && saysNotFound(v)) ||
        hashFraction(this.seed, `jobs-nodata:${key}`) < this.notFoundRate;
      if (nodata) return null;
      const rng = Prng.from(this.seed, `jobs:${key}`);
      // An aged world: jobs that were filled are gone, and jobs posted since come after the seed's ones.
      const indices = Array.from({ length: rng.int(1, 60) + this.age.newEntries(`jobs:${key}`) }, (_, i) => i);
      const list = indices.filter((i) => !this.age.left(`jobs:${key}:${i}`)).map((i) => this.job(search, key, i));
      // Newest first, as a job board lists them.
      return list.sort((a, b) => b.posted_timestamp - a.posted_timestamp);
    });
  }

  private job(search: JobSearch, key: string, index: number): JobRecord {
    const rng = Prng.from(this.seed, `job:${key}:${index}`);
    const ids = listOf(search.companyIds);
    // With companyIds every job is at one of those companies, each id always the same company (by seed and id alone).
    const companyRng = ids.length > 0 ? Prng.from(this.seed, `company-id:${String(Number(rng.pick(ids)))}`) : rng;
    const company = `${companyRng.pick(NAME_PREFIXES)} ${companyRng.pick(NAME_CORES)}`;
    const logo = `${MEDIA_ORIGIN}/dms/image/company-logo_100_100/${companyRng.alnum(16)}`;
    const companySlug = slugify(company);
    const keywords = search.keywords?.trim();
    const baseTitle = rng.pick(JOB_TITLES);
    const title = keywords && rng.chance(0.5) ? `${baseTitle} (${capitalize(keywords)})` : baseTitle;
    const maxDays = MAX_DAYS_BY_TIME_POSTED[search.timePosted?.trim().toLowerCase() ?? ''] ?? 60;
    const postedMs = daysBefore(rng.int(0, maxDays));
    const employment = fromFilter(rng, search.jobTypes, EMPLOYMENT_TYPES);
    const seniority = fromFilter(rng, search.experienceLevels, SENIORITY_LEVELS);
    const html = descriptionHtml(rng, title, company);
    return {
      title,
      company_name: company,
      company_link: `${NETWORK_ORIGIN}/company/${companySlug}`,
      location: jobLocation(rng, search.location, search.workplaceTypes),
      url: `${NETWORK_ORIGIN}/jobs/view/${3_000_000_000 + (hash32(this.seed, `job-url:${key}:${index}`) % 999_999_999)}`,
      posted_timestamp: postedMs / 1000,
      posted_date: isoDate(postedMs),
      is_actively_hiring: rng.chance(0.6),
      company_logo_url: logo,
      description_html: html,
      description: htmlToText(html),
      criteria: {
        'Employment type': employment,
        Industries: rng.pick(INDUSTRIES),
        'Job function': rng.pick(JOB_FUNCTIONS),
        'Seniority level': seniority,
      },
    };
  }
}

/** The items of a comma-separated parameter, each as filterItem() spells it, blanks dropped. */
function listOf(value: string | undefined): string[] {
  return (value ?? '').split(',').map(filterItem).filter(Boolean);
}

/** A filter value as compared: trimmed, lower-case, blanks and hyphens as one space (`Full-time` = `full time`). */
function filterItem(value: string): string {
  return value.trim().toLowerCase().replace(/[\s-]+/g, ' ');
}

function capitalize(text: string): string {
  return text.replace(/(^|\s)(\p{L})/gu, (_, space: string, letter: string) => space + letter.toUpperCase());
}

/** A criteria value that agrees with a list filter when one is given (`full time` -> `Full-time`). */
function fromFilter(rng: Prng, filter: string | undefined, values: readonly string[]): string {
  const wanted = listOf(filter);
  const matching = values.filter((v) => wanted.includes(filterItem(v)));
  return rng.pick(matching.length > 0 ? matching : values);
}

/** Workplace type of each known `workplaceTypes` value, as a job's location shows it. */
const WORKPLACE_SUFFIX_BY_TYPE: Record<string, string> = { 'on site': ' (On-site)', onsite: ' (On-site)', remote: ' (Remote)', hybrid: ' (Hybrid)' };

/** A job's location: with `workplaceTypes`, one of the wanted types (unknown values ignored, as for job types). */
function jobLocation(rng: Prng, requested: string | undefined, workplaceTypes: string | undefined): string {
  const wanted = [...new Set(listOf(workplaceTypes).flatMap((t) => WORKPLACE_SUFFIX_BY_TYPE[t] ?? []))];
  const suffix = rng.pick(wanted.length > 0 ? wanted : WORKPLACE_SUFFIXES);
  if (requested && requested.trim() !== '') return capitalize(requested.trim()) + suffix;
  const [city, area, country] = rng.pick(PLACES);
  return `${capitalize(city)}, ${(area ?? country).toUpperCase()}${suffix}`;
}

function descriptionHtml(rng: Prng, title: string, company: string): string {
  const duties = rng.sample(POST_SENTENCES, rng.int(2, 4));
  const perks = rng.sample(JOB_PERKS, rng.int(2, 4));
  return [
    `<p><strong>About ${escapeHtml(company)}</strong></p>`,
    `<p>${escapeHtml(company)} is hiring a ${escapeHtml(title)} to join our growing team &amp; help us build what’s next.</p>`,
    `<p>What you'll do:</p>`,
    `<ul>${duties.map((d) => `<li>${escapeHtml(d)}</li>`).join('')}</ul>`,
    `<p>Benefits &amp; perks:</p>`,
    `<ul>${perks.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}</ul>`,
    `<p>We welcome applicants from all backgrounds — “diversity makes us better”.<br>Salary: €${rng.int(40, 140)},000 &ndash; depending on experience.</p>`,
  ].join('');
}

/** The references descriptionHtml() writes: escapeHtml()'s and `&ndash;`. */
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", ndash: '\u2013' };

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Plain text of the sandbox's job HTML: how `description` is made from `description_html`, so the two always match. */
function htmlToText(html: string): string {
  return html
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|li|ul|ol|h[1-6]|div)>/gi, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#39|[a-z]+);/g, (whole, name: string) => ENTITIES[name] ?? whole)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
