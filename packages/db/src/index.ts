export * from './database';
export * from './errors';
export * from './migrator';
export * from './paths';
export * from './schema';
export * from './roles';
export * from './row';
export * from './sql-text';
export * from './pg-errors';
export * from './pooler-probe';
// The one drizzle-orm instance of the repository: other packages import `sql` from here, so SQL
// fragments and executors always come from the same copy (pnpm may install peer variants).
export { sql, type SQL } from 'drizzle-orm';
