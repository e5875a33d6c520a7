import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * The import boundaries `pnpm lint` checks (/.dependency-cruiser.cjs): each rule reports what it
 * is there to refuse, on a fixture tree that breaks each once, and the repository breaks none.
 * dependency-cruiser is ESM-only, so it runs as its CLI, the way `pnpm lint` runs it.
 */

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const FIXTURE = path.join(__dirname, 'fixtures', 'import-boundaries');
const DEPCRUISE = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

interface Violation {
  rule: string;
  from: string;
  to: string;
}

function cruise(cwd: string, targets: string[]): Violation[] {
  const run = spawnSync(
    process.execPath,
    [DEPCRUISE, '--config', CONFIG, '--output-type', 'json', ...targets],
    { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  if (!run.stdout) throw new Error(`depcruise printed nothing (exit ${run.status}): ${run.stderr}`);
  const result = JSON.parse(run.stdout) as {
    summary: { violations: { rule: { name: string }; from: string; to: string }[] };
  };
  return result.summary.violations
    .map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }))
    .sort((a, b) => `${a.rule} ${a.from} ${a.to}`.localeCompare(`${b.rule} ${b.from} ${b.to}`));
}

const api = (p: string) => `apps/api/src/${p}`;

describe('import boundaries', () => {
  it('reports each kind of violation in the fixture tree, and nothing else', () => {
    expect(cruise(FIXTURE, ['apps', 'packages'])).toEqual(
      [
        // a two-file cycle (reported once, at the first import in it)
        { rule: 'no-circular', from: api('common/cycle-a.ts'), to: api('common/cycle-b.ts') },
        // a two-folder cycle, through public files, with no file in a cycle
        { rule: 'no-circular-units', from: api('modules/alpha'), to: api('modules/beta') },
        { rule: 'no-circular-units', from: api('modules/beta'), to: api('modules/alpha') },
        // another module's internals (its service, imported beside it, is allowed)
        {
          rule: 'no-feature-internals',
          from: api('modules/gamma/gamma.service.ts'),
          to: api('modules/alpha/alpha.repository.ts'),
        },
        {
          rule: 'no-import-of-root-files',
          from: api('modules/gamma/gamma.controller.ts'),
          to: api('main.ts'),
        },
        {
          rule: 'no-import-of-unit-subfolders',
          from: api('modules/gamma/gamma.controller.ts'),
          to: api('ops/openapi/doc.ts'),
        },
        // packages by name, never by path; another app's src never
        {
          rule: 'no-relative-import-of-another-package',
          from: api('modules/gamma/gamma.controller.ts'),
          to: 'packages/db/src/index.ts',
        },
        {
          rule: 'no-relative-import-of-another-package',
          from: 'apps/api/test/sim.ts',
          to: 'apps/sim/src/state.ts',
        },
        {
          rule: 'no-deep-import-of-another-package',
          from: 'apps/api/test/sim.ts',
          to: 'apps/sim/src/state.ts',
        },
      ].sort((a, b) => `${a.rule} ${a.from} ${a.to}`.localeCompare(`${b.rule} ${b.from} ${b.to}`)),
    );
  });

  it('finds no violation in the repository', () => {
    const violations = cruise(ROOT, ['apps', 'packages', 'bench']);
    expect(violations.map((v) => `${v.rule}: ${v.from} → ${v.to}`)).toEqual([]);
  });
});
