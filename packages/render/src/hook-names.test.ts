import { describe, expect, it } from 'vitest';
import { RenderErrorReason } from './errors.ts';
import { render, renderError } from './test-support.ts';

const job = (annotations: string): string => `apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n${annotations}spec: {}\n`;

describe('a hook named by generateName', () => {
  it('renders with its generateName standing in as its name, for either hook annotation', () => {
    for (const annotation of ['syncline.dev/hook', 'argocd.argoproj.io/hook']) {
      const [object] = render({ files: { 'app/job.yaml': job(`  annotations:\n    ${annotation}: PreSync\n`) } });
      expect(object?.metadata).toMatchObject({ name: 'migrate-', generateName: 'migrate-', namespace: 'staging' });
    }
  });

  it('is still refused without a hook annotation: an ordinary object needs a name', () => {
    const error = renderError({ files: { 'app/job.yaml': job('') } });
    expect(error.reason).toBe(RenderErrorReason.InvalidObject);
    expect(error.message).toContain('Job has no metadata.name');
  });
});
