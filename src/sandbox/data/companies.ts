import type { Address, CompanyRecord, SimilarCompaniesAccount } from '../../spec/types.ts';
import { Prng, hash32, hashFraction } from '../prng.ts';
import { BoundedCache, canonicalUrlKey, saysNotFound, slugify } from './canonical.ts';
import { SeededData } from './world-age.ts';
import {
  COUNTRY_NAMES, HASHTAGS, INDUSTRIES, MEDIA_ORIGIN, NAME_CORES, NAME_PREFIXES, NAME_SUFFIXES, NETWORK_ORIGIN, PLACES,
  SPECIALITIES, STAFF_RANGES, STREETS, TAGLINES,
} from './words.ts';

/** A company's place in one similar-companies list: who it is and how relevant. */
interface ListEntry { name: string; slug: string; score: number; value: string }

const FUNDING_TYPES = ['SEED', 'SERIES_A', 'SERIES_B', 'SERIES_C', 'PRIVATE_EQUITY'] as const;

/**
 * How many ranked candidates a filtered list is picked from (the unfiltered list is the first 3..45): a filter keeps
 * matching ones up to that list's size, so a narrow filter still finds some, and the ranking is only narrowed.
 */
const CANDIDATE_POOL = 200;

/** Generates (and caches) similar-company lists and company records from a seed. */
export class CompanyData extends SeededData {
  /** Company records by slug (relevancy is set per list): the same company looks the same in every list. */
  private readonly bases = new BoundedCache<string, CompanyRecord>(20_000);
  private readonly lists = new BoundedCache<string, ListEntry[] | null>(20_000);

  /** The whole list for a reference URL and filters; null (a 404) when the input has no data or filters leave none. */
  similarTo(url: string, account: SimilarCompaniesAccount | undefined): ListEntry[] | null {
    const ref = canonicalUrlKey(url);
    const filter = compileFilter(account);
    return this.lists.get(`${ref}\u0000${filter?.key ?? ''}`, () => {
      if (saysNotFound(url) || hashFraction(this.seed, `company-nodata:${ref}`) < this.notFoundRate) return null;
      // One ranking per reference, whatever the filters: its stream is that of the unfiltered list.
      const rng = Prng.from(this.seed, `similar:${ref}\u0000`);
      const length = rng.int(3, 45);
      // An aged world: entries that left are gone and those ranked next move up into the list.
      const stays = (entry: ListEntry) => !this.age.left(`${ref}:${entry.slug}`);
      if (!filter) return ranking(rng, ref, this.age.days > 0 ? length * 2 : length).filter(stays).slice(0, length);
      const list = ranking(rng, ref, CANDIDATE_POOL).filter((entry) => filter.matches(this.base(entry)) && stays(entry)).slice(0, length);
      return list.length === 0 ? null : list;
    });
  }

  /** The full record of one list entry. */
  record(entry: ListEntry): CompanyRecord {
    return { ...this.base(entry), relevancy: { score: entry.score, value: entry.value } };
  }

  /** The record of a company without its relevancy: the same in every list. */
  private base(entry: ListEntry): CompanyRecord {
    return this.bases.get(entry.slug, () => this.generateBase(entry.name, entry.slug));
  }

  private generateBase(name: string, slug: string): CompanyRecord {
    const rng = Prng.from(this.seed, `company:${slug}`);
    const [rangeStart, rangeEnd] = rng.pick(STAFF_RANGES);
    // Empty lists occur as well as null ones: a client must store "none" either way.
    const industries = rng.chance(0.08) ? [] : rng.sample(INDUSTRIES, rng.int(1, 2));
    const hq = address(rng, true);
    const other = Array.from({ length: rng.int(0, 3) }, () => address(rng, false));
    const foundedYear = rng.int(1950, 2022);
    const specialities = rng.nullOrList(0.15, 0.05, () => rng.sample(SPECIALITIES, rng.int(2, 8)));
    const website = `https://www.${slug}.com`;
    return {
      url: `${NETWORK_ORIGIN}/company/${slug}`,
      name,
      universalName: slug,
      type: rng.chance(0.25) ? 'PUBLIC_COMPANY' : 'PRIVATELY_HELD',
      objectUrn: hash32(this.seed, `urn:${slug}`) % 90_000_000 + 1_000_000,
      description:
        `${name} is a ${industries[0]?.toLowerCase() ?? 'young'} company founded in ${foundedYear} and based in ${hq.city}.\n\n` +
        `We help teams work better with ${(specialities?.length ? specialities : ['modern tools']).slice(0, 2).join(' and ')}.\n` +
        `Visit ${website} to learn more.`,
      phone: (rng.chance(0.6) ? '+' : '') + rng.digits(rng.int(10, 12)),
      followers: rng.chance(0.9) ? this.age.grown(rng.int(12, 2_500_000), `followers:${slug}`) : null,
      website,
      logo: `${MEDIA_ORIGIN}/dms/image/company-logo_200_200/${rng.alnum(16)}`,
      cover: rng.chance(0.7) ? `${MEDIA_ORIGIN}/dms/image/company-background_10000/${rng.alnum(16)}` : null,
      tagline: rng.chance(0.6) ? rng.pick(TAGLINES) : null,
      foundedYear,
      staff: staffOf(this.age.grown(rng.int(rangeStart, rangeEnd), `staff:${slug}`), rangeStart, rangeEnd),
      locations: { headquarter: hq, other },
      fundingData: rng.chance(0.5)
        ? {
            numFundingRounds: rng.int(1, 6),
            lastFundingRound: {
              fundingType: rng.pick(FUNDING_TYPES),
              moneyRaised: { amount: String(rng.int(5, 500) * 100_000), currencyCode: 'USD' },
              announcedOn: { year: rng.int(Math.max(foundedYear, 2010), 2024), month: rng.int(1, 12), day: rng.int(1, 28) },
            },
          }
        : null,
      specialities,
      industries,
      hashtags: rng.nullOrList(0.35, 0.1, () => rng.sample(HASHTAGS, rng.int(1, 3))),
      relevancy: { score: 0, value: 'D' },
    };
  }
}

/** A staff count and its published band: a company that grew past its band is shown in the next one. */
function staffOf(total: number, start: number, end: number): CompanyRecord['staff'] {
  const band = total > end ? STAFF_RANGES.find(([lo, hi]) => total >= lo && total <= hi) : undefined;
  return { total, range: band ? { start: band[0], end: band[1] } : { start, end } };
}

/** The first `count` companies ranked by similarity to `ref`, most similar first, never `ref` itself. */
function ranking(rng: Prng, ref: string, count: number): ListEntry[] {
  // `ref`'s own company slug, or the whole key when it has no /company/ path.
  const seen = new Set<string>([/\/company\/([^/]+)/.exec(ref)?.[1] ?? ref]);
  const list: ListEntry[] = [];
  let score = 0.9 + rng.next() * 0.09;
  while (list.length < count) {
    const name = [rng.pick(NAME_PREFIXES), rng.pick(NAME_CORES), rng.pick(NAME_SUFFIXES)].join(' ').trim();
    const slug = slugify(name);
    if (seen.has(slug)) continue;
    seen.add(slug);
    list.push({ name, slug, score: Math.round(score * 1e4) / 1e4, value: grade(score) });
    score = Math.max(0.01, score - rng.next() * 0.04);
  }
  return list;
}

/** An address; `isPrimary` (type not shown) is true or null on a headquarter, false or null elsewhere. */
function address(rng: Prng, headquarter: boolean): Address {
  const [city, area, country] = rng.pick(PLACES);
  const line2 = rng.next();
  return {
    city,
    country,
    geographicArea: area,
    isPrimary: rng.chance(0.25) ? null : headquarter,
    line1: `${rng.int(1, 999)} ${rng.pick(STREETS)}`,
    line2: line2 < 0.3 ? `suite ${rng.int(100, 999)}` : line2 < 0.35 ? '' : null,
    postalCode: country === 'gb' ? `EC${rng.int(1, 4)}A ${rng.int(1, 9)}BB` : rng.digits(5),
  };
}

function grade(score: number): string {
  if (score >= 0.75) return 'A';
  if (score >= 0.5) return 'B';
  if (score >= 0.25) return 'C';
  return 'D';
}

/** Country code of each spelling a filter may use: the code itself and every lower-case name of it. */
const COUNTRY_BY_NAME = new Map<string, string>(
  Object.entries(COUNTRY_NAMES).flatMap(([code, names]) => [[code, code] as const, ...names.map((n) => [n, code] as const)]),
);

/**
 * The filters of `account`: `key` (canonical: order and case do not matter) and `matches`; null when none filters (as
 * the client treats them). `location` keeps companies whose headquarter country it names (code or lower-case name);
 * `employeeSize`, those whose staff.total is in any range, bounds included, whatever its `type` (only RANGE is known).
 */
function compileFilter(account: SimilarCompaniesAccount | undefined) {
  const locations = (account?.location ?? []).map((l) => l.trim().toLowerCase().replace(/\s+/g, ' ')).filter((l) => l !== '');
  const ranges = account?.employeeSize?.range ?? [];
  if (locations.length === 0 && ranges.length === 0) return null;
  const countries = new Set(locations.map((l) => COUNTRY_BY_NAME.get(l) ?? l));
  const key = JSON.stringify([[...countries].sort(), ranges.map((r) => `${r.start}-${r.end}`).sort()]);
  return {
    key,
    matches(company: CompanyRecord): boolean {
      if (countries.size > 0 && !countries.has(company.locations.headquarter.country.toLowerCase())) return false;
      const total = company.staff.total;
      return ranges.length === 0 || ranges.some((r) => total >= r.start && total <= r.end);
    },
  };
}
