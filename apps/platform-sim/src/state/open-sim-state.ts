import { SimState } from './sim-state';

/**
 * The simulator's state: in memory without a file (the tests: isolated, nothing on disk), else
 * kept in that SQLite file, created (with its directory) when missing; relative to the cwd.
 */
export async function openSimState(stateFile?: string): Promise<SimState> {
  if (stateFile === undefined) return new SimState();
  // Only a durable simulator loads the native addon.
  const { SqliteStateFile } = await import('./sqlite-state-file');
  const file = SqliteStateFile.open(stateFile);
  try {
    return new SimState(file);
  } catch (error) {
    file.close();
    throw error;
  }
}
