/** @jest-config-loader-options {"transpileOnly": true} */
import { availableParallelism } from 'node:os';
import type { Config } from 'jest';

// swc transforms TypeScript (types are checked by `pnpm typecheck`) and the ESM-only @nestjs/*
// packages, which jest cannot load as they ship.
const swc: [string, Record<string, unknown>] = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];

const shared = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': swc,
    '^.+/(@nestjs|content-disposition)/.+\\.js$': swc,
  },
  // ESM-only dependencies jest must transform: Nest 12 and what @fastify/static pulls in.
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/)?(@nestjs|content-disposition)[+/@])'],
  moduleNameMapper: {
    '^@listing/(db|testing|idempotency|outbox|client)$': '<rootDir>/packages/$1/src',
    '^@listing/platform-sim$': '<rootDir>/apps/platform-sim/src',
  },
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
} satisfies Config;

const harness = {
  globalSetup: '<rootDir>/packages/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/packages/testing/src/global-teardown.ts',
};

const config: Config = {
  reporters: ['default', '<rootDir>/scripts/jest-summary-reporter.cjs'],
  // Integration and e2e tests start processes and wait on real locks; unit tests finish in ms.
  testTimeout: 60_000,
  // Jest's default is one worker less than the cores: one on a 2-core machine. Those files
  // mostly wait (on spawned roles, leases, timers, the database), so one per core halves the run
  // there; at most 4, which keeps the roles' connection pools under PostgreSQL's 100 connections.
  maxWorkers: Math.min(Math.max(availableParallelism(), 2), 4),
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/{apps,packages}/*/{src,test}/**/*.spec.ts'] },
    {
      ...shared,
      ...harness,
      displayName: 'integration',
      testMatch: ['<rootDir>/{apps,packages}/*/{src,test}/**/*.integration-spec.ts'],
    },
    {
      ...shared,
      ...harness,
      displayName: 'e2e',
      testMatch: ['<rootDir>/{apps,packages}/*/{src,test}/**/*.e2e-spec.ts'],
      // Every response of an API under test is checked against the OpenAPI document it serves.
      setupFilesAfterEnv: ['<rootDir>/apps/api/test/support/contract-fetch.ts'],
    },
  ],
};

export default config;
