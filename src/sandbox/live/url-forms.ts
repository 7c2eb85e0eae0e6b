import { hashFraction } from '../prng.ts';
import type { UrlForms } from './live-shapes.ts';

/** Country subdomains the site serves its pages on (a client must fold them into `www.`). */
const COUNTRY_SUBDOMAINS = ['de', 'fr', 'uk', 'in', 'br', 'es', 'it', 'nl'] as const;

/**
 * The origin one URL of the records is written with: `https://<host>` (bare), `https://<cc>.<host>` or
 * `https://www.<host>`, drawn from seed and `key`; the key names the URL's place in an answer, so one company
 * may be written one way in one list and another way in the next, as the live answers do.
 */
export function originFor(forms: UrlForms, seed: number, key: string): string {
  const r = hashFraction(seed, `url-form:${key}`);
  if (r < forms.bareRate) return `https://${forms.host}`;
  if (r < forms.bareRate + forms.countryRate) {
    const index = Math.floor(hashFraction(seed, `url-country:${key}`) * COUNTRY_SUBDOMAINS.length);
    return `https://${COUNTRY_SUBDOMAINS[index] ?? 'de'}.${forms.host}`;
  }
  return wwwOrigin(forms);
}

/** The origin the site writes its own pages with. */
export function wwwOrigin(forms: UrlForms): string {
  return `https://www.${forms.host}`;
}

/** `url` with its scheme and host replaced by `origin` (the data writes every URL as https://host/path). */
export function rehost(url: string, origin: string): string {
  return url.replace(/^https:\/\/[^/]+/, origin);
}

/**
 * A reference URL on a country or mobile subdomain (`de.host/...`, `m.host/...`) rewritten on `www.`, so it
 * names the same company as the `www.` and bare forms, as it does on the live site. Hosts of two labels
 * (`ab.com`) are left alone.
 */
export function foldSubdomain(url: string): string {
  return url.replace(/^(\s*(?:[a-z][a-z0-9+.-]*:\/\/)?)(?:[a-z]{2}|m)\.([^/.?#]+\.[^/?#]+)/i, '$1www.$2');
}
