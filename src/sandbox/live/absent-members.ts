import { hashFraction } from '../prng.ts';

/** A member of a record by its path of names (criteria names hold spaces, so no dotted strings). */
export type MemberPath = readonly string[];

/** Members the live service may leave out or send as null, by record kind: never an identity, nor the envelope's. */
export const OPTIONAL_MEMBERS = {
  company: [
    ['name'], ['universalName'], ['type'], ['objectUrn'], ['description'], ['phone'], ['followers'], ['website'],
    ['logo'], ['cover'], ['tagline'], ['foundedYear'], ['staff', 'total'], ['staff', 'range'],
    ['locations', 'headquarter'], ['locations', 'other'], ['fundingData'], ['specialities'], ['industries'],
    ['hashtags'],
  ],
  post: [
    ['author', 'name'], ['author', 'headline'], ['author', 'network_url'], ['author', 'profile_image'],
    ['post', 'timestamp'], ['post', 'text_content'], ['post', 'hashtags'], ['post', 'post_media_description'],
    ['post', 'post_media_url'], ['engagement', 'reactions'], ['engagement', 'comments_count'],
  ],
  job: [
    ['title'], ['company_name'], ['company_link'], ['location'], ['posted_timestamp'], ['posted_date'],
    ['is_actively_hiring'], ['company_logo_url'], ['description_html'], ['description'],
    ['criteria', 'Employment type'], ['criteria', 'Industries'], ['criteria', 'Job function'], ['criteria', 'Seniority level'],
  ],
} as const satisfies Record<string, readonly MemberPath[]>;

type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A copy of `record` with each optional member of its kind left out or null at the given rates, drawn by seed, kind,
 * identity and path, so a record always lacks the same members. Only objects on the way to an edit are copied.
 */
export function withAbsentMembers<T extends object>(
  record: T,
  kind: keyof typeof OPTIONAL_MEMBERS,
  identity: string,
  seed: number,
  rates: { missingRate: number; nullRate: number },
): T {
  const root: Json = { ...(record as Json) };
  const copied = new Set<Json>([root]);
  for (const path of OPTIONAL_MEMBERS[kind]) {
    const r = hashFraction(seed, `absent:${kind}:${identity}:${path.join('.')}`);
    if (r >= rates.missingRate + rates.nullRate) continue;
    const parent = writableParent(root, path, copied);
    const name = path[path.length - 1] as string;
    if (!parent || !(name in parent)) continue;
    if (r < rates.missingRate) delete parent[name];
    else parent[name] = null;
  }
  return root as T;
}

/** The object holding the member at `path`, copied (once) along the way; null when a step is not an object. */
function writableParent(root: Json, path: MemberPath, copied: Set<Json>): Json | null {
  let parent = root;
  for (const name of path.slice(0, -1)) {
    const child = parent[name];
    if (!isObject(child)) return null;
    if (!copied.has(child)) copied.add((parent[name] = { ...child }));
    parent = parent[name] as Json;
  }
  return parent;
}
