// A realistic multi-environment example (testdata/multi-env): one app, shared values, a staging and a prod
// target with overrides and a patch. The rendered objects are compared with golden files; update them with
// `pnpm exec vitest run --project unit packages/render -u` and review the diff.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import jsyaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { layerValues, parseValues } from './values.ts';
import type { RenderTarget } from './render.ts';
import { TemplateCache } from './template.ts';
import { loadTree, render, testdata } from './test-support.ts';

const example = join(testdata, 'multi-env');
const files = loadTree('multi-env/apps');
const values = layerValues([parseValues(readFileSync(join(example, 'values.yaml'), 'utf8'), 'values.yaml')]);
const targets = jsyaml.load(readFileSync(join(example, 'targets.yaml'), 'utf8')) as RenderTarget[];
const cache = new TemplateCache();

describe('multi-environment example', () => {
  it.each(targets.map((target) => [target.name, target] as const))('renders %s as the golden file says', async (name, target) => {
    const objects = render({
      files,
      path: 'multi-env/apps/web',
      values,
      target,
      cache,
      source: { repo: 'https://git.example.com/org/configs.git', revision: 'c0ffee0000000000000000000000000000000000' },
    });
    const text = objects.map((object) => jsyaml.dump(object, { lineWidth: -1, noRefs: true })).join('---\n');
    await expect(text).toMatchFileSnapshot(join(example, 'golden', `${name}.yaml`));
  });
});
