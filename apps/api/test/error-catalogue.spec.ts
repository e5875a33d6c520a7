import path from 'node:path';
import ts from 'typescript';

/**
 * What the compiler refuses: the fixtures under fixtures/error-catalogue/ (excluded from
 * `pnpm typecheck`) compiled with the repository's own compiler options.
 */
const ROOT = path.resolve(__dirname, '..', '..', '..');
const FIXTURES = path.join(__dirname, 'fixtures', 'error-catalogue');
const MARKER = /^\s*\/\/ error (TS\d+): (.+)$/;

interface Found {
  line: number;
  code: string;
  message: string;
}

function compile(): Map<string, Found[]> {
  const configPath = path.join(ROOT, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, configPath);
  const files = ['accepted.ts', 'rejected.ts'].map((name) => path.join(FIXTURES, name));
  const program = ts.createProgram(files, { ...options, noEmit: true });
  const byFile = new Map<string, Found[]>(files.map((file) => [path.basename(file), []]));
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const file = diagnostic.file ? path.basename(diagnostic.file.fileName) : '(global)';
    const line = diagnostic.file
      ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1
      : 0;
    const found = {
      line,
      code: `TS${diagnostic.code}`,
      message: ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'),
    };
    if (!byFile.has(file)) byFile.set(file, []);
    byFile.get(file)!.push(found);
  }
  return byFile;
}

/** The diagnostics rejected.ts announces: one per marker, on the line after it. */
function expected(file: string): Found[] {
  const lines = ts.sys.readFile(path.join(FIXTURES, file))!.split('\n');
  return lines.flatMap((text, index) => {
    const m = MARKER.exec(text);
    return m ? [{ line: index + 2, code: m[1]!, message: m[2]! }] : [];
  });
}

describe('error catalogues, as the compiler sees them', () => {
  let diagnostics: Map<string, Found[]>;
  beforeAll(() => {
    diagnostics = compile();
  }, 60_000);

  it('a catalogue, its classes and a merge written as documented compile cleanly', () => {
    expect(diagnostics.get('accepted.ts')).toEqual([]);
    // Nothing outside the fixtures failed either (a broken src file would hide behind them).
    expect([...diagnostics.keys()].sort()).toEqual(['accepted.ts', 'rejected.ts']);
  });

  it('refuses a code without status or description, a code outside its catalogue, a code declared twice', () => {
    const wanted = expected('rejected.ts');
    expect(wanted.length).toBeGreaterThanOrEqual(9);
    const found = diagnostics.get('rejected.ts')!;
    // Exactly the marked lines fail, each with the diagnostic its marker names.
    expect(found.map(({ line, code }) => `${line} ${code}`).sort()).toEqual(
      wanted.map(({ line, code }) => `${line} ${code}`).sort(),
    );
    for (const want of wanted) {
      const at = found.find((f) => f.line === want.line)!;
      expect(at.message).toContain(want.message);
    }
  });
});
