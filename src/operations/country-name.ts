/**
 * A country by name, lower-case as jobs write `account.location` filters (`germany`): the service sends codes (`de`)
 * in some answers, names in others. Codes are named by Node's ICU data (English), as the migration that filled
 * existing rows was (docs/schema.md); anything else is kept as sent, lower-cased.
 */
/** Made on first use: building it loads ICU's region names, which every CLI start would pay. */
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
