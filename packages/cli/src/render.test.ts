// `syncline render` as users run it (the real executable; render reads no cluster): -o yaml|json as kubectl
// prints them, and one clear line, exit 1, for a path or values file that is not there.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const root = join(import.meta.dirname, '..', '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'syncline.js');
const render = (...args: string[]) => spawnSync(process.execPath, [bin, 'render', ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
const web = ['examples/repo/apps/web', '--values', 'examples/preview/web-dev.yaml', '--target', 'dev', '--namespace', 'web-dev'];

describe('syncline render', () => {
  it('-o json prints the same objects as the YAML default, in a List', () => {
    const yaml = render(...web);
    expect(yaml.status, yaml.stderr).toBe(0);
    const documents = parseAllDocuments(yaml.stdout).map((d) => d.toJS() as unknown);
    expect(documents.length).toBeGreaterThan(1);
    const json = render(...web, '-o', 'json');
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ apiVersion: 'v1', kind: 'List', items: documents });
  }, 60_000);

  it('a path or values file that is not there is one line naming it, exit 1', () => {
    const missing = render('apps/nowhere');
    expect(missing).toMatchObject({ status: 1, stdout: '' });
    expect(missing.stderr).toBe('error: apps/nowhere: no such file or directory (render takes a template file or a directory of templates)\n');
    const values = render('examples/repo/apps/web', '-f', 'nope.yaml');
    expect(values).toMatchObject({ status: 1, stderr: 'error: --values nope.yaml: no such file\n' });
    const empty = mkdtempSync(join(tmpdir(), 'syncline-render-empty-'));
    try {
      expect(render(empty)).toMatchObject({
        status: 1,
        stdout: '',
        stderr: `error: ${empty}: an empty directory (render takes a template file or a directory of templates)\n`,
      });
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  }, 60_000);
});
