export * from './environment';
export * from './test-database';
export * from './fixtures';
export * from './cuttable-proxy';
export * from './pg-activity';
export * from './wait-for';
export * from './pgbouncer';
export * from './commit-cutting-proxy';
