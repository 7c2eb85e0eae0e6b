import { LIVE_SHAPES, type LiveShape, type SandboxOptions } from '../options.ts';

/** The live-service shapes in force, each null when off; see LIVE_SHAPES and SANDBOX_DEFAULTS. */
export interface LiveShapes {
  absences: { missingRate: number; nullRate: number } | null;
  /** The member the author's profile URL is sent under (`acmenet_url`), or null for `network_url`. */
  authorUrlMember: string | null;
  /** The largest similar-companies page, or null for no cap. */
  maxNum: number | null;
  urlForms: UrlForms | null;
}

/** How the records' network URLs are written: on which host, how often bare or on a country subdomain. */
export interface UrlForms {
  host: string;
  bareRate: number;
  countryRate: number;
}

type LiveOptions = Pick<
  SandboxOptions,
  'liveShapes' | 'memberMissingRate' | 'memberNullRate' | 'brand' | 'networkHost' | 'maxNum' | 'bareUrlRate' | 'countryUrlRate'
>;

/** The shapes the options turn on, or null when none is (the spec mode, whose code path stays as it was). */
export function liveShapesOf(options: LiveOptions): LiveShapes | null {
  const on: readonly LiveShape[] = options.liveShapes === true ? LIVE_SHAPES : options.liveShapes === false ? [] : options.liveShapes;
  if (on.length === 0) return null;
  return {
    absences: on.includes('absent-members') ? { missingRate: options.memberMissingRate, nullRate: options.memberNullRate } : null,
    authorUrlMember: on.includes('brand-url') ? `${options.brand}_url` : null,
    maxNum: on.includes('page-cap') ? options.maxNum : null,
    urlForms: on.includes('url-forms')
      ? { host: options.networkHost, bareRate: options.bareUrlRate, countryRate: options.countryUrlRate }
      : null,
  };
}
