/**
 * CPU time of a process from /proc (Linux): the benchmarks report CPU per request or per event
 * for each process (the API, PostgreSQL's backends, Redis, ...), which drifts less between runs
 * than throughput does on a shared machine.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** Whether /proc can be read here (not on macOS): without it the CPU columns stay empty. */
export const procCpuAvailable = existsSync('/proc/self/stat');

let clockTicks = null;
/** USER_HZ: the unit of utime and stime in /proc/<pid>/stat (100 on every common Linux). */
function ticksPerSecond() {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU of `pid` so far, in ms; null when the process is gone (or no /proc). */
export function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name, in parentheses, may hold spaces: the fields start after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond();
  } catch {
    return null;
  }
}

/**
 * ms of CPU spent between two snapshots of the same processes (Maps pid → cpuMs), summed. A
 * process missing from `before` started within the window and is not counted: its start-up is
 * not the load's.
 */
export function cpuSpentMs(before, after) {
  let ms = 0;
  for (const [pid, end] of after) {
    const start = before.get(pid);
    if (start !== undefined) ms += end - start;
  }
  return ms;
}
