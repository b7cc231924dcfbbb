// `pnpm record-demo`: runs `pnpm demo --once`, records each line of output with the time it appeared,
// and writes docs/demo.svg: a terminal recording whose lines appear at their recorded times (CSS
// animation, no script), so the README shows the real walkthrough as it ran.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const root = join(import.meta.dirname, '..');
const started = Date.now();
const lines: { at: number; text: string }[] = [{ at: 0, text: '$ ./pnpm demo --once' }];
const child = spawn(process.execPath, [join(root, 'scripts', 'demo.ts'), '--once'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
createInterface({ input: child.stdout }).on('line', (text) => {
  process.stdout.write(`${text}\n`);
  if (!text.startsWith('… ')) lines.push({ at: (Date.now() - started) / 1000, text });
});
const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
if (code !== 0) {
  console.error(`the demo failed (exit ${code}); not recording`);
  process.exit(1);
}

const escape = (s: string): string => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
const lineHeight = 18;
const width = 980;
const height = 40 + lines.length * lineHeight;
const total = (lines.at(-1)?.at ?? 1) + 4;
const colour = (text: string): string =>
  text.startsWith('✓') ? '#7ee787' : text.startsWith('✗') ? '#ff7b72' : text.startsWith('$') ? '#e6edf3' : text.startsWith('    ') ? '#8b949e' : '#e6edf3';
const body = lines
  .map((line, i) => {
    const pct = ((line.at / total) * 100).toFixed(2);
    return `  <text x="16" y="${32 + i * lineHeight}" fill="${colour(line.text)}" class="l" style="animation-name:a${i}">${escape(line.text)}</text>\n  <style>@keyframes a${i}{0%,${pct}%{opacity:0}${Math.min(100, Number(pct) + 0.01).toFixed(2)}%,100%{opacity:1}}</style>`;
  })
  .join('\n');
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="ui-monospace,SFMono-Regular,Menlo,Consolas,monospace" font-size="13">
  <title>Syncline demo: ./pnpm demo --once (recorded ${new Date().toISOString().slice(0, 10)}, ${(lines.at(-1)?.at ?? 0).toFixed(1)} s)</title>
  <style>.l{white-space:pre;animation-duration:${total.toFixed(1)}s;animation-iteration-count:infinite;animation-timing-function:steps(1)}</style>
  <rect width="100%" height="100%" rx="8" fill="#0d1117"/>
${body}
</svg>
`;
writeFileSync(join(root, 'docs', 'demo.svg'), svg);
console.log(`wrote docs/demo.svg (${lines.length} lines, ${total.toFixed(1)} s loop)`);
