// `node scripts/heap-by-type.ts FILE.heapsnapshot [--top 30]`: a V8 heap snapshot summed by node type and
// constructor name (self sizes), largest first; the question "where does the operator's memory go".
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' } } });
const file = positionals[0];
if (file === undefined) {
  console.error('usage: node scripts/heap-by-type.ts FILE.heapsnapshot [--top N]');
  process.exit(2);
}
type Snapshot = { snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } }; nodes: number[]; strings: string[] };
const heap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const fields = heap.snapshot.meta.node_fields;
const width = fields.length;
const typeAt = fields.indexOf('type');
const nameAt = fields.indexOf('name');
const sizeAt = fields.indexOf('self_size');
const types = heap.snapshot.meta.node_types[0];
const sums = new Map<string, { bytes: number; count: number }>();
let total = 0;
for (let i = 0; i < heap.nodes.length; i += width) {
  const type = types[heap.nodes[i + typeAt] ?? 0] ?? '?';
  // Strings and code are summed by type alone: their "names" are their contents.
  const name = type === 'object' || type === 'closure' || type === 'native' ? `${type} ${heap.strings[heap.nodes[i + nameAt] ?? 0] ?? '?'}` : type;
  const size = heap.nodes[i + sizeAt] ?? 0;
  total += size;
  const entry = sums.get(name) ?? { bytes: 0, count: 0 };
  entry.bytes += size;
  entry.count += 1;
  sums.set(name, entry);
}
const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(2)} MB`;
console.log(`${file}: ${mb(total)} in ${heap.nodes.length / width} nodes`);
for (const [name, { bytes, count }] of [...sums].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(values.top))) {
  console.log(`${mb(bytes).padStart(10)}  ${String(count).padStart(8)}  ${name}`);
}
