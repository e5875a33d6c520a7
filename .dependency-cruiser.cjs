// Import boundaries, checked by `pnpm lint` (dependency-cruiser). A violation names its rule; the
// comment on each rule says why it is there. apps/api/test/import-boundaries.spec.ts proves that
// each rule bites, on the fixture tree in apps/api/test/fixtures/import-boundaries/.
//
// The API's units (apps/api/src): each feature module, apps/api/src/modules/<feature>/, is one unit;
// so is each other top-level folder (common/, config/, infrastructure/, ops/, outbox/); the root
// files (main.ts, worker.ts, app.module.ts, …) are one more.
//
// "Another module's internals": from outside a feature module, only its public files may be
// imported, the ones directly in its folder named
//   *.module.ts  *.service.ts  *.client.ts  *.errors.ts  *.failures.ts  *.dto.ts  *-view.ts
//   *.job.ts  *.jobs.ts  *.guard.ts  index.ts
// (its Nest module, its services and clients, its errors and job failure codes, its request and
// response shapes, its job definitions, its guards, its barrel). Everything else is internal: its
// *.repository.ts (its tables are its own: other modules go through its service), its
// controllers, its helpers.

const path = require('node:path');

const API = '^apps/api/src/';
// A unit of the API: modules/<feature>, or another top-level folder.
const UNIT = '(modules/[^/]+|(?!modules/)[^/]+)';
const PUBLIC_FILE =
  '[^/]+(?:\\.module|\\.service|\\.client|\\.errors|\\.failures|\\.dto|-view|\\.jobs?|\\.guard)\\.ts$|index\\.ts$';
// A workspace package: apps/<name>, packages/<name>, bench.
const WORKSPACE = '((?:apps|packages)/[^/]+|bench)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'No import cycles between files: in a cycle, which module loads first decides what the ' +
        'other sees (undefined at import time), and neither can be understood or tested alone.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular-units',
      comment:
        'No cycles between the API’s folders (a feature module, common/, config/, ops/, …): two ' +
        'folders that need each other are one module in two places. Checked on folders, so a cycle ' +
        'counts even when no single file is in one. Together with the two rules below (nothing ' +
        'imports the root files; other units see only the files at the top of a unit, never its ' +
        'subfolders), a cycle between units is always a cycle between these folders.',
      severity: 'error',
      scope: 'folder',
      from: { path: API },
      to: { path: API, circular: true },
    },
    {
      name: 'no-import-of-root-files',
      comment:
        'The root files of apps/api/src are entry points and the composition root (main, worker, ' +
        'dispatcher, cli, app.module, app.factory, test-faults): they import the units, never the ' +
        'other way round, which keeps them out of any cycle. A helper a unit needs belongs in the unit ' +
        'or in common/.',
      severity: 'error',
      from: { path: `${API}[^/]+/` },
      to: { path: `${API}[^/]+\\.ts$` },
    },
    {
      name: 'no-import-of-unit-subfolders',
      comment:
        'A unit’s subfolders (ops/openapi/, ops/metrics/, …) are its internals: other units import ' +
        'only the files at its top level. This also keeps the folder-level cycle check whole, since it ' +
        'sees a subfolder as a folder of its own.',
      severity: 'error',
      from: { path: `${API}${UNIT}/` },
      to: { path: `${API}${UNIT}/[^/]+/`, pathNot: `${API}$1/` },
    },
    {
      name: 'no-feature-internals',
      comment:
        'From outside a feature module only its public files may be imported (see the top of this ' +
        'file). A repository, controller or helper of another module is its implementation, free ' +
        'to change without asking who else reaches into it.',
      severity: 'error',
      from: { path: `${API}(?:modules/([^/]+)/|(?!modules/))` },
      to: {
        path: `${API}modules/[^/]+/`,
        pathNot: `${API}modules/(?:$1/|[^/]+/(?:${PUBLIC_FILE}))`,
      },
    },
    {
      name: 'no-relative-import-of-another-package',
      comment:
        'A workspace package (packages/*, apps/*) is imported by its name (@listing/db), never by a ' +
        'relative path into its folder: the name is what the package exports, and what the build and ' +
        'package.json dependencies see.',
      severity: 'error',
      from: { path: `^${WORKSPACE}/` },
      to: {
        path: '^(?:apps|packages)/[^/]+/',
        pathNot: '^$1/',
        dependencyTypes: ['local'],
        dependencyTypesNot: ['aliased'],
      },
    },
    {
      name: 'no-deep-import-of-another-package',
      comment:
        'Only a package’s entry (src/index.ts, what @listing/<name> resolves to) is its public ' +
        'surface; this covers another app’s src too (tests included): what a test needs from ' +
        'platform-sim, platform-sim exports from its entry.',
      severity: 'error',
      from: { path: `^${WORKSPACE}/` },
      to: { path: '^(?:apps|packages)/[^/]+/(?!src/index\\.ts$)', pathNot: '^$1/' },
    },
  ],
  options: {
    doNotFollow: { path: '(^|/)node_modules/' },
    // Built output, and the fixture tree whose whole point is to break these rules (the spec
    // cruises it on its own).
    exclude: { path: '(^|/)(node_modules|dist|coverage)/|^apps/api/test/fixtures/import-boundaries/' },
    // `import type` counts: a type-only import still ties one unit to another.
    tsPreCompilationDeps: true,
    // tsconfig.json maps @listing/<name> to each package's src/index.ts. By absolute path: the
    // spec cruises its fixture tree from that tree's folder.
    tsConfig: { fileName: path.join(__dirname, 'tsconfig.json') },
    skipAnalysisNotInRules: true,
    reporterOptions: { text: { highlightFocused: true } },
  },
};
