import { describe, expect, it } from 'vitest';
import { parseAddress } from './server.ts';

describe('parseAddress (--probe-addr, --webhook-addr)', () => {
  it('reads HOST:PORT, :PORT and bracketed IPv6 hosts', () => {
    expect(parseAddress('0.0.0.0:9292')).toEqual({ host: '0.0.0.0', port: 9292 });
    expect(parseAddress(':9292')).toEqual({ host: '0.0.0.0', port: 9292 });
    expect(parseAddress('10.1.2.3:80')).toEqual({ host: '10.1.2.3', port: 80 });
    expect(parseAddress('[::]:9292')).toEqual({ host: '::', port: 9292 });
    expect(parseAddress('[fd00::1]:9292')).toEqual({ host: 'fd00::1', port: 9292 });
  });

  it('refuses a missing or out-of-range port', () => {
    expect(() => parseAddress('0.0.0.0:http')).toThrow(/HOST:PORT/);
    expect(() => parseAddress('0.0.0.0:70000')).toThrow(/HOST:PORT/);
  });
});
