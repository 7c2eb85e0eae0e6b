/** Vocabulary of the synthetic data: realistic-looking names, places and phrases. */

export const NETWORK_ORIGIN = 'https://www.network.com';
export const MEDIA_ORIGIN = 'https://media.network.com';

export const NAME_PREFIXES = [
  'Acme', 'Blue', 'Bright', 'Cedar', 'Cobalt', 'Delta', 'Ember', 'Falcon', 'Granite', 'Harbor', 'Iron', 'Juniper',
  'Keystone', 'Lumen', 'Maple', 'Nimbus', 'Northwind', 'Oak', 'Orbit', 'Pioneer', 'Quartz', 'Redwood', 'Silver',
  'Summit', 'Tidal', 'Umbra', 'Vertex', 'Willow', 'Zenith', 'Atlas', 'Beacon', 'Crescent', 'Evergreen', 'Helix',
] as const;

export const NAME_CORES = [
  'Robotics', 'Analytics', 'Logistics', 'Health', 'Energy', 'Systems', 'Labs', 'Foods', 'Software', 'Capital',
  'Networks', 'Dynamics', 'Materials', 'Media', 'Bio', 'Mobility', 'Security', 'Cloud', 'Retail', 'Design',
] as const;

export const NAME_SUFFIXES = ['', '', '', 'Inc', 'Group', 'GmbH', 'Ltd', 'SA', 'Technologies', 'Partners'] as const;

export const INDUSTRIES = [
  'Software Development', 'IT Services and IT Consulting', 'Financial Services', 'Hospital & Health Care',
  'Renewable Energy Semiconductor Manufacturing', 'Automation Machinery Manufacturing', 'Retail', 'Food and Beverage Services',
  'Transportation, Logistics, Supply Chain and Storage', 'Biotechnology Research', 'Marketing Services', 'Staffing and Recruiting',
  'Computer and Network Security', 'Telecommunications', 'Higher Education', 'Media Production',
] as const;

export const SPECIALITIES = [
  'machine learning', 'cloud computing', 'supply chain', 'data engineering', 'e-commerce', 'cybersecurity', 'robotics',
  'digital health', 'payments', 'computer vision', 'solar power', 'consulting', 'mobile apps', 'devops', 'iot',
  'customer success', 'B2B SaaS', 'recruiting', 'analytics', 'embedded systems',
] as const;

/** [city, geographicArea or null, country] — lower-case as in the spec's examples. */
export const PLACES: ReadonlyArray<readonly [string, string | null, string]> = [
  ['san francisco', 'ca', 'us'], ['new york', 'ny', 'us'], ['austin', 'tx', 'us'], ['seattle', 'wa', 'us'],
  ['boston', 'ma', 'us'], ['chicago', 'il', 'us'], ['toronto', 'on', 'ca'], ['vancouver', 'bc', 'ca'],
  ['london', 'england', 'gb'], ['manchester', 'england', 'gb'], ['berlin', null, 'de'], ['münchen', 'bayern', 'de'],
  ['paris', 'île-de-france', 'fr'], ['lyon', null, 'fr'], ['madrid', null, 'es'], ['barcelona', 'cataluña', 'es'],
  ['amsterdam', 'noord-holland', 'nl'], ['stockholm', null, 'se'], ['zürich', 'zh', 'ch'], ['bangalore', 'karnataka', 'in'],
  ['singapore', null, 'sg'], ['tokyo', null, 'jp'], ['sydney', 'nsw', 'au'], ['são paulo', 'sp', 'br'],
];

/** Lower-case names of PLACES' country codes, as `account.location` spells them; a filter may use either. */
export const COUNTRY_NAMES: Readonly<Record<string, readonly string[]>> = {
  us: ['united states', 'united states of america', 'usa'],
  ca: ['canada'],
  gb: ['united kingdom', 'uk', 'great britain'],
  de: ['germany', 'deutschland'],
  fr: ['france'],
  es: ['spain', 'españa'],
  nl: ['netherlands', 'the netherlands'],
  se: ['sweden'],
  ch: ['switzerland'],
  in: ['india'],
  sg: ['singapore'],
  jp: ['japan'],
  au: ['australia'],
  br: ['brazil', 'brasil'],
};

export const STREETS = [
  'market street', 'main street', 'king street', 'harbour road', 'innovation way', 'park avenue', 'station road',
  'rue de rivoli', 'hauptstraße', 'calle mayor', 'elm street', 'mission street',
] as const;

export const STAFF_RANGES: ReadonlyArray<readonly [number, number]> = [
  [2, 10], [11, 50], [51, 200], [201, 500], [501, 1000], [1001, 5000], [5001, 10000], [10001, 50000],
];

export const TAGLINES = [
  'Building the future of work', 'Making logistics simple', 'Data you can trust', 'Health care, reimagined',
  'Clean energy for everyone', 'Software that ships', 'Your partner in growth',
] as const;

export const FIRST_NAMES = [
  'Amélie', 'Jürgen', 'Sofía', 'Hiroshi', 'Priya', 'James', 'Olivia', 'Mateo', 'Chen', 'Fatima', 'Lukas', 'Emma',
  'Noah', 'Aisha', 'Björn', 'Zoë', 'Rafael', 'Yuki', 'Daniel', 'Grace',
] as const;

export const LAST_NAMES = [
  'Müller', 'García', 'Tanaka', 'Smith', 'Patel', 'Dubois', 'Okafor', 'Kowalski', 'Nguyen', 'Johansson', 'Rossi',
  'Silva', 'Brown', 'Núñez', 'Kim', 'Schmidt', 'Lefèvre', 'Walker', 'Ivanova', 'Cohen',
] as const;

export const HEADLINES = [
  'Head of Product at {company}', 'Software Engineer | TypeScript, Node.js', 'Founder & CEO at {company}',
  'Talent Acquisition Partner', 'Data Scientist — NLP & ML', 'VP Marketing at {company}', 'Supply chain nerd. Opinions my own.',
  'Senior Recruiter at {company} · We are hiring!', 'Investor, advisor, runner 🏃',
] as const;

export const POST_OPENERS = [
  'Excited to share some news! 🎉', 'Big milestone for our team today.', 'A few thoughts after this week’s conference:',
  'We’re hiring! 🚀', 'Lessons learned from shipping our biggest release yet.', 'Grateful for this community 🙏',
  'Petit retour sur notre journée à Paris — quelle équipe ! 🇫🇷', 'Heute war ein großartiger Tag für unser Team. 💪',
  '東京オフィスを開設しました！日本のお客様との新しい一歩です。', '¡Gran noticia para nuestro equipo en España! 🎊',
] as const;

export const POST_SENTENCES = [
  'Huge thanks to everyone who made this possible.', 'Our customers asked, and we listened.',
  'The best teams learn in public.', 'If you are working on similar problems, let’s talk.',
  'Data beats opinions — but context beats data.', 'Small steps, every day, add up.',
  'We grew the team from 5 to 50 people this year.', 'Naïve approaches rarely survive contact with production.',
  'Links in the comments 👇', 'More to come soon. Stay tuned! ✨',
] as const;

export const HASHTAGS = [
  '#hiring', '#startups', '#ai', '#leadership', '#engineering', '#growth', '#sustainability', '#remotework',
  '#datascience', '#product', '#careers', '#innovation',
] as const;

export const JOB_TITLES = [
  'Software Engineer', 'Senior Backend Engineer', 'Data Analyst', 'Product Manager', 'UX Designer',
  'DevOps Engineer', 'Account Executive', 'Marketing Manager', 'Customer Success Manager', 'Data Engineer',
  'Machine Learning Engineer', 'HR Business Partner', 'Financial Analyst', 'Operations Intern', 'Sales Development Representative',
] as const;

export const EMPLOYMENT_TYPES = ['Full-time', 'Part-time', 'Contract', 'Internship', 'Temporary'] as const;
export const SENIORITY_LEVELS = ['Internship', 'Entry level', 'Associate', 'Mid-Senior level', 'Director', 'Executive'] as const;
export const JOB_FUNCTIONS = [
  'Engineering and Information Technology', 'Sales and Business Development', 'Marketing', 'Finance', 'Human Resources',
  'Product Management', 'Design', 'Operations',
] as const;

export const JOB_PERKS = [
  'Flexible working hours & remote days', 'Health, dental and vision insurance', '30 days of paid vacation',
  'Learning budget of €1,500 per year', 'Stock options', 'A friendly team that ships often',
] as const;

export const WORKPLACE_SUFFIXES = ['', ' (Remote)', ' (Hybrid)', ' (On-site)'] as const;
