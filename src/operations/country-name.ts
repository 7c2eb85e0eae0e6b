/**
 * The country of an address by name, lower-case as jobs write their `account.location` filters (`germany`):
 * the service sends two-letter codes (`de`) in some answers and names in others. A code is named by the ICU
 * data Node ships (English); anything else is kept as sent, lower-cased. The migration that filled this
 * column for existing rows was generated from the same names (see docs/schema.md).
 */
/** Made on first use: building it loads ICU's region names (~20 ms), which every CLI start paid, export and query too. */
let regionNames: Intl.DisplayNames | undefined;
const TWO_LETTERS = /^[a-z]{2}$/i;

export function countryName(country: unknown): string | null {
  if (typeof country !== 'string') return null;
  const text = country.trim();
  if (text === '') return null;
  if (TWO_LETTERS.test(text)) {
    const name = (regionNames ??= new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' })).of(text.toUpperCase());
    // `zz` is ICU's "Unknown Region": not a country.
    if (name !== undefined && text.toLowerCase() !== 'zz') return name.toLowerCase();
  }
  return text.toLowerCase();
}
