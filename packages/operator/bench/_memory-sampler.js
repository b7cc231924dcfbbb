// Preloaded into the operator by `pnpm bench operator --memory-trace FILE` (node --import): every 250 ms, one JSON
// line of where its resident memory is: RSS split into anonymous and file-backed pages (/proc/self/status), Node's
// process.memoryUsage() and V8's heap spaces (committed and used). Plain JavaScript: it runs beside the bundle.
import { appendFileSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { setInterval } from 'node:timers';
import { getHeapSpaceStatistics } from 'node:v8';

const file = process.env['SYNCLINE_BENCH_MEMORY_TRACE'];
if (file !== undefined && file !== '') {
  const kb = (status, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  const sample = () => {
    const status = readFileSync('/proc/self/status', 'utf8');
    const usage = process.memoryUsage();
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name.replace(/_space$/, ''), [s.space_size, s.space_used_size]]));
    appendFileSync(
      file,
      `${JSON.stringify({ t: Date.now(), rss: usage.rss, anon: kb(status, 'RssAnon'), fileRss: kb(status, 'RssFile'), hwm: kb(status, 'VmHWM'), heapTotal: usage.heapTotal, heapUsed: usage.heapUsed, external: usage.external, arrayBuffers: usage.arrayBuffers, spaces })}\n`,
    );
  };
  setInterval(sample, 250).unref();
}
