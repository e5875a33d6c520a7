// Prints how many tests ran per jest project (unit, integration, e2e), then one plain
// "N passed, N failed" line for the whole run.
class ProjectSummaryReporter {
  onRunComplete(_contexts, results) {
    const byProject = new Map();
    for (const file of results.testResults) {
      const name = file.displayName?.name ?? 'default';
      const row = byProject.get(name) ?? { files: 0, passed: 0, failed: 0, skipped: 0 };
      row.files += 1;
      row.passed += file.numPassingTests;
      row.failed += file.numFailingTests + (file.testExecError ? 1 : 0);
      row.skipped += file.numPendingTests + file.numTodoTests;
      byProject.set(name, row);
    }
    const lines = ['', 'tests by project:'];
    for (const [name, r] of byProject) {
      lines.push(
        `  ${name.padEnd(12)} ${String(r.files).padStart(3)} files  ${String(r.passed).padStart(4)} passed  ${r.failed} failed  ${r.skipped} skipped`,
      );
    }
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    lines.push(
      '',
      `${results.numPassedTests} passed, ${failed} failed, ${results.numPendingTests + results.numTodoTests} skipped`,
    );
    process.stdout.write(lines.join('\n') + '\n');
  }
}
module.exports = ProjectSummaryReporter;
