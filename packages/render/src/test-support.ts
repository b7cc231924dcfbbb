// Test helpers: load a fixture tree the way source-git hands files over, and render with sane defaults.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { renderTarget } from './render.ts';
import type { RenderTargetOptions } from './render.ts';
import { createStaticDiscovery } from './discovery.ts';
import type { KubernetesObject } from './objects.ts';
import type { SourceFile } from './files.ts';
import { RenderError } from './errors.ts';

export const testdata = join(import.meta.dirname, 'testdata');

/** Every file under testdata/<dir>, with paths relative to testdata/ ('/'-separated), content as bytes. */
export function loadTree(dir: string): SourceFile[] {
  const root = join(testdata, dir);
  const walk = (at: string): SourceFile[] =>
    readdirSync(at, { withFileTypes: true }).flatMap((entry) => {
      const full = join(at, entry.name);
      if (entry.isDirectory()) return walk(full);
      return [{ path: relative(testdata, full).split(sep).join('/'), content: new Uint8Array(readFileSync(full)) }];
    });
  return walk(root);
}

export const discovery = createStaticDiscovery({ 'monitoring.coreos.com/PrometheusRule': true });

type Overrides = Partial<Omit<RenderTargetOptions, 'files'>> & { files: RenderTargetOptions['files'] | Record<string, string> };

/** Render with a default target (staging/staging), source and discovery. Files may be a plain record. */
export function render(options: Overrides): KubernetesObject[] {
  const files = isRecord(options.files) ? new Map(Object.entries(options.files)) : options.files;
  return renderTarget({
    path: 'app',
    target: { name: 'staging', namespace: 'staging' },
    source: { repo: 'https://git.example.com/org/configs.git', revision: '0123456789abcdef0123456789abcdef01234567' },
    discovery,
    ...options,
    files,
  });
}

function isRecord(files: Overrides['files']): files is Record<string, string> {
  return !(files instanceof Map) && !Array.isArray(files);
}

/** The RenderError a render throws (fails the test when it does not throw one). */
export function renderError(options: Overrides): RenderError {
  try {
    render(options);
  } catch (error) {
    if (error instanceof RenderError) return error;
    throw error;
  }
  throw new Error('expected the render to fail');
}
