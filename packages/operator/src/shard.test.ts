import { describe, expect, it } from 'vitest';
import { SHARD_LABEL, inShard, otherShardsSelector, parseShard, shardLeaseName, shardSelector, shardedWaker } from './shard.ts';

describe('shards', () => {
  it('accepts DNS-label shard names and refuses the rest with a clear error', () => {
    expect(parseShard(undefined)).toBeUndefined();
    expect(parseShard('a')).toBe('a');
    expect(parseShard('shard-1')).toBe('shard-1');
    for (const bad of ['', 'A', 'a_b', '-a', 'a-', 'a.b', 'a=b', '!a', 'x'.repeat(64)]) {
      expect(() => parseShard(bad)).toThrow(/--shard .*expected a DNS label/);
    }
    expect(() => parseShard('default')).toThrow(/the default shard is the operator without --shard/);
  });

  it('selects its own label, or (the default shard) the unlabelled objects', () => {
    expect(shardSelector('a')).toBe(`${SHARD_LABEL}=a`);
    expect(shardSelector(undefined)).toBe(`!${SHARD_LABEL}`);
    // and the complement (`!=` matches the unlabelled objects too)
    expect(otherShardsSelector('a')).toBe(`${SHARD_LABEL}!=a`);
    expect(otherShardsSelector(undefined)).toBe(SHARD_LABEL);
  });

  it('places every object in exactly one shard', () => {
    const shards = [undefined, 'a', 'b'];
    const cases: (Record<string, string> | undefined)[] = [undefined, {}, { other: 'x' }, { [SHARD_LABEL]: 'a' }, { [SHARD_LABEL]: 'b' }];
    for (const labels of cases) {
      expect(shards.filter((s) => inShard(s, labels))).toHaveLength(1);
    }
    // A shard nobody runs: no running shard takes it.
    expect(shards.filter((s) => inShard(s, { [SHARD_LABEL]: 'c' }))).toHaveLength(0);
  });

  it('gives each shard its own Lease', () => {
    expect(shardLeaseName('syncline-leader', undefined)).toBe('syncline-leader');
    expect(shardLeaseName('syncline-leader', 'a')).toBe('syncline-leader-a');
  });

  it("wakes its own syncs itself and another shard's through the other waker", () => {
    const own: string[] = [];
    const other: string[] = [];
    const wake = shardedWaker(
      (key) => key.endsWith('/theirs'),
      (key) => own.push(key),
      (key) => other.push(key),
    );
    for (const key of ['ns/mine', 'ns/theirs', 'ns/unknown']) wake(key);
    expect(own).toEqual(['ns/mine', 'ns/unknown']);
    expect(other).toEqual(['ns/theirs']);
  });
});
