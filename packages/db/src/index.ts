export * from './database';
export * from './errors';
export * from './migrator';
export * from './paths';
export * from './schema';
export * from './roles';
export * from './pg-errors';
