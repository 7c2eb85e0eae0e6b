/** A year of nightly runs, as the report's size test and bench both generate it. */
import { nightlyRows } from './nightly-dataset.ts';

/** The report's clock for the year: the last night started five hours before. */
export const YEAR_NOW = new Date('2026-06-30T06:00:00.000Z');

/** 365 nights of 40 calls, 500 invalid rows on the last one. */
export const yearOfNights = () => nightlyRows({ nights: 365, callsPerNight: 40, lastNight: new Date(YEAR_NOW.getTime() - 5 * 3_600_000), invalidRows: 500 });
