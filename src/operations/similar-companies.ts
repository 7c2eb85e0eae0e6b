/**
 * similar-companies: the answer contract of its 200 body (api.md, "Company record") and how its pages end.
 * A company names itself by `url`; every other member is optional (see answer-contract.ts).
 */
import type { SimilarCompaniesRequest } from '../spec/types.ts';
import { given, int, list, nullable, num, obj, str, bool, strict, type AnswerContract, type ReadBody, type ReadObject } from './answer-contract.ts';
import { CREDIT_MEMBERS } from './credit-members.ts';
import type { DriftTally } from './drift.ts';

const address = obj({
  city: str(),
  country: str(),
  geographicArea: nullable(str()),
  isPrimary: given(),
  line1: str(),
  line2: given(),
  postalCode: str(),
});

const company = obj({
  url: strict(str()),
  name: str(),
  universalName: str(),
  type: str(),
  objectUrn: int(),
  description: str(),
  phone: str(),
  followers: given(),
  website: str(),
  logo: str(),
  cover: given(),
  tagline: given(),
  foundedYear: int(),
  staff: obj({ total: int(), range: obj({ start: int(), end: int() }) }),
  locations: obj({ headquarter: address, other: list(address) }),
  fundingData: given(),
  specialities: nullable(list(str())),
  industries: list(str()),
  hashtags: nullable(list(str())),
  relevancy: obj({ score: num(), value: str() }),
});

const body = {
  success: bool(),
  message: str(),
  data: obj({ content: list(company), number: int(), first: bool(), empty: bool() }),
  page: int(),
  num: int(),
  ...CREDIT_MEMBERS,
};

export const similarCompaniesContract: AnswerContract<typeof body> = {
  operation: 'similar-companies',
  body,
  recordsAt: ['data', 'content'],
  identity: 'url',
  recordMembers: [],
};

export type SimilarCompaniesAnswer = ReadBody<typeof body>;
export type CompanyAnswer = ReadObject<(typeof company)['members']>;

/** Page size asked for when a request leaves `num` out (known-behaviour.md: 10 is the common choice). */
export const SIMILAR_COMPANIES_DEFAULT_NUM = 10;

/**
 * Whether a page ends the list: it holds fewer companies than the page size the service answered with (its
 * `num` echo, when smaller than the one asked for: the service caps it), else the one asked for. A capped size
 * is counted as drift (`num`, capped) so that the run says so once.
 */
export function similarCompaniesLastPage(asked: SimilarCompaniesRequest | undefined, answer: SimilarCompaniesAnswer, drift: DriftTally): boolean {
  const echoed = typeof answer.num === 'number' && answer.num > 0 ? answer.num : null;
  // A stored body read again without its request (reprocess) has only the echo to go by.
  if (asked === undefined) return (answer.data?.content?.length ?? 0) < (echoed ?? SIMILAR_COMPANIES_DEFAULT_NUM);
  const askedNum = asked.num ?? SIMILAR_COMPANIES_DEFAULT_NUM;
  let size = askedNum;
  if (echoed !== null && echoed < askedNum) {
    size = echoed;
    drift.note('num', '', 'capped', `asked ${askedNum}, answered ${echoed}`);
  }
  return (answer.data?.content?.length ?? 0) < size;
}
