import path from 'node:path';

/** The repository's sql/ directory, from src/ (ts) or dist/ (js) alike. */
export const MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', '..', 'sql');
