import { describe, expect, it } from 'vitest';
import { matchesPattern, parsePatternList, patternProblem } from './glob.ts';

const matches = (pattern: string, name: string) => matchesPattern({ text: pattern, glob: /[*?]/.test(pattern) }, name);

describe('namespace patterns', () => {
  it('match exact names exactly', () => {
    expect(matches('prod', 'prod')).toBe(true);
    expect(matches('prod', 'prod-eu')).toBe(false);
  });

  it('read * as any run of characters, anchored at both ends', () => {
    expect(matches('team-*', 'team-a')).toBe(true);
    expect(matches('team-*', 'team-')).toBe(true);
    expect(matches('team-*', 'team')).toBe(false);
    expect(matches('team-*', 'my-team-a')).toBe(false);
    expect(matches('*-prod', 'eu-prod')).toBe(true);
    expect(matches('*-prod', 'eu-prod-2')).toBe(false);
    expect(matches('*', 'anything')).toBe(true);
  });

  it('read ? as exactly one character', () => {
    expect(matches('team-?', 'team-a')).toBe(true);
    expect(matches('team-?', 'team-ab')).toBe(false);
    expect(matches('team-?', 'team-')).toBe(false);
  });

  it('refuse what is neither a name nor a glob, naming the entry', () => {
    expect(patternProblem('Team')).toContain('"Team"');
    expect(patternProblem('team.a')).toBeDefined();
    expect(patternProblem('[ab]')).toBeDefined();
    expect(patternProblem('team-')).toContain('start and end');
    expect(patternProblem('x'.repeat(64))).toBeDefined();
    expect(patternProblem('team-*')).toBeUndefined();
  });

  it('read a comma list, trimming, skipping empty and repeated entries', () => {
    const { patterns, problems } = parsePatternList(' staging, prod ,,team-*,prod,');
    expect(problems).toEqual([]);
    expect(patterns).toEqual([
      { text: 'staging', glob: false },
      { text: 'prod', glob: false },
      { text: 'team-*', glob: true },
    ]);
    expect(parsePatternList('ok,Bad_one').problems).toHaveLength(1);
  });
});
