// Files written by the real sops CLI (built from its Go module) decrypt here to exactly what `sops decrypt`
// prints: byte for byte for dotenv and binary files, the same documents (keys in the same order, values of
// the same types) for YAML and JSON, whose layout sops re-indents as it likes.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateIdentity, identityToRecipient } from 'age-encryption';
import * as openpgp from 'openpgp';
import { isMap, isScalar, isSeq, parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureSops } from '@syncline/test-support';
import { RenderErrorReason } from '../errors.ts';
import { render, renderError } from '../test-support.ts';
import type { SopsCli } from '@syncline/test-support';
import { DataKeyCache, DecryptedFileCache, decryptSopsFile, isSopsEncrypted } from './decrypt.ts';
import { SopsError, SopsErrorCause } from './errors.ts';
import { parseKeySecret } from './keys.ts';
import type { SopsKeyRing } from './keys.ts';

let sops: SopsCli;
const age: { identity: string; recipient: string }[] = [];
let ring: SopsKeyRing;

beforeAll(async () => {
  sops = await ensureSops((line) => console.log(line));
  for (let i = 0; i < 4; i++) {
    const identity = await generateIdentity();
    age.push({ identity, recipient: await identityToRecipient(identity) });
  }
  ring = await parseKeySecret('Secret ns/sops-keys', { 'identity.agekey': `# created by the test\n${age[0]?.identity}\n` });
}, 20 * 60_000);

const ageEnv = (...indices: number[]): Record<string, string> => ({ SOPS_AGE_KEY: indices.map((i) => age[i]?.identity).join('\n') });
const recipient = (i: number): string => age[i]?.recipient ?? '';

/** Documents as nested [key, value] pairs: key order and scalar types are compared, layout is not. */
function documents(text: string): unknown[] {
  const convert = (node: unknown): unknown => {
    if (isMap(node)) return node.items.map((pair) => [isScalar(pair.key) ? pair.key.value : pair.key, convert(pair.value)]);
    if (isSeq(node)) return node.items.map(convert);
    if (isScalar(node)) return node.value;
    return node ?? null;
  };
  return parseAllDocuments(text, { version: '1.2', intAsBigInt: true }).map((doc) => convert(doc.contents));
}

const secretYaml = `apiVersion: v1
kind: Secret
metadata:
  name: db
  labels:
    app: db # an inline comment
type: Opaque
stringData:
  password: "s3cr3t-P@ss"
  multiline: |
    line one
    line two: not a key
  "10": integer-like key keeps its place
  unicode: "héllo ✓"
  empty: ""
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  retries: "3"
values:
  int: 42
  big: 1234567890123456789
  float: 1.5
  tiny: 0.000001
  yes: true
  no: false
  nothing: null
  list: [a, 1, 2.5, true]
  nested:
    - name: x
      deep: {k: v}
`;

async function decrypt(path: string, encrypted: Uint8Array | string, keys: SopsKeyRing | 'none' = ring): Promise<Uint8Array | string> {
  return decryptSopsFile({ path, content: encrypted, keys: keys === 'none' ? undefined : keys });
}

async function failure(promise: Promise<unknown>): Promise<SopsError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SopsError) return error;
    throw error;
  }
  throw new Error('expected a SopsError');
}

describe('files written by the sops CLI (age)', () => {
  it('decrypts a multi-document YAML file to the documents sops decrypt prints', async () => {
    const encrypted = sops.encrypt({ name: 'secret.yaml', plaintext: secretYaml, args: ['--age', recipient(0)] });
    expect(isSopsEncrypted('secrets/secret.yaml', encrypted)).toBe(true);
    expect(encrypted.toString()).not.toContain('s3cr3t');
    const ours = await decrypt('secrets/secret.yaml', encrypted);
    const theirs = sops.decrypt({ name: 'secret.yaml', encrypted, env: ageEnv(0) }).toString();
    expect(typeof ours).toBe('string');
    expect(documents(ours as string)).toEqual(documents(theirs));
    expect(documents(ours as string)).toEqual(documents(secretYaml));
  });

  it('decrypts JSON to the value sops decrypt prints', async () => {
    const plaintext = JSON.stringify({ b: 1, a: { '2': 'two', '1': [1.25, false, null, 'x'] }, token: 'abc' });
    const encrypted = sops.encrypt({ name: 'values.json', plaintext, args: ['--age', recipient(0)] });
    const ours = await decrypt('values.json', encrypted);
    const theirs = sops.decrypt({ name: 'values.json', encrypted, env: ageEnv(0) }).toString();
    expect(documents(ours as string)).toEqual(documents(theirs));
    expect(JSON.parse(ours as string)).toEqual(JSON.parse(plaintext));
  });

  it('decrypts dotenv byte for byte as sops decrypt prints it, comments included', async () => {
    const plaintext = '# database\nDB_USER=app\nDB_PASSWORD=p=a=s=s\nMULTI=one\\ntwo\nEMPTY=\n';
    const encrypted = sops.encrypt({ name: 'app.env', plaintext, args: ['--age', recipient(0)] });
    const ours = await decrypt('config/app.env', encrypted);
    const theirs = sops.decrypt({ name: 'app.env', encrypted, env: ageEnv(0) });
    expect(Buffer.from(ours as string)).toEqual(theirs);
  });

  it('decrypts a binary file (not UTF-8) byte for byte', async () => {
    const plaintext = Buffer.concat([randomBytes(4096), Buffer.from([0xff, 0xfe, 0x00])]);
    const encrypted = sops.encrypt({ name: 'keystore.p12', plaintext, args: ['--age', recipient(0)] });
    const ours = await decrypt('certs/keystore.p12', encrypted);
    const theirs = sops.decrypt({ name: 'keystore.p12', encrypted, env: ageEnv(0) });
    expect(Buffer.from(ours as Uint8Array)).toEqual(theirs);
    expect(Buffer.from(ours as Uint8Array)).toEqual(plaintext);
  });

  it.each([
    ['encrypted_regex', ['--encrypted-regex', '^(data|stringData)$']],
    ['unencrypted_suffix', ['--unencrypted-suffix', '_plain']],
    ['unencrypted_regex', ['--unencrypted-regex', '^(apiVersion|kind|name)$']],
    ['encrypted_suffix', ['--encrypted-suffix', 'Data']],
    ['mac_only_encrypted', [], `creation_rules:\n  - encrypted_regex: ^stringData$\n    mac_only_encrypted: true\n`],
  ])('honours %s as sops does', async (name, args, config?: string) => {
    const plaintext = `${secretYaml.split('---')[0]}extra_plain: visible\n`;
    const encrypted = sops.encrypt({ name: 'secret.yaml', plaintext, args: ['--age', recipient(0), ...args], ...(config === undefined ? {} : { config }) });
    expect(encrypted.toString()).toContain(name);
    const ours = await decrypt('secret.yaml', encrypted);
    expect(documents(ours as string)).toEqual(documents(sops.decrypt({ name: 'secret.yaml', encrypted, env: ageEnv(0) }).toString()));
    expect(documents(ours as string)).toEqual(documents(plaintext));
  });

  it('opens a file encrypted for several recipients with any one of their keys', async () => {
    const encrypted = sops.encrypt({ name: 's.yaml', plaintext: 'token: abc\n', args: ['--age', `${recipient(1)},${recipient(2)}`] });
    const second = await parseKeySecret('Secret ns/k', { 'b.agekey': age[2]?.identity ?? '' });
    expect(documents((await decrypt('s.yaml', encrypted, second)) as string)).toEqual([[['token', 'abc']]]);
  });

  it('joins key groups with the Shamir threshold of .sops.yaml', async () => {
    const config = `creation_rules:\n  - path_regex: .*\n    shamir_threshold: 2\n    key_groups:\n${[1, 2, 3].map((i) => `      - age: ['${recipient(i)}']\n`).join('')}`;
    const encrypted = sops.encrypt({ name: 'group.yaml', plaintext: 'password: hunter2\n', config });
    expect(encrypted.toString()).toContain('shamir_threshold: 2');
    expect(documents(sops.decrypt({ name: 'group.yaml', encrypted, env: ageEnv(1, 3) }).toString())).toEqual([[['password', 'hunter2']]]);
    const two = await parseKeySecret('Secret ns/k', { 'one.agekey': age[1]?.identity ?? '', 'three.agekey': age[3]?.identity ?? '' });
    expect(documents((await decrypt('group.yaml', encrypted, two)) as string)).toEqual([[['password', 'hunter2']]]);
    const one = await parseKeySecret('Secret ns/k', { 'one.agekey': age[2]?.identity ?? '' });
    const error = await failure(decrypt('group.yaml', encrypted, one));
    expect(error.code).toBe(SopsErrorCause.NoMatchingKey);
    expect(error.message).toContain('1 of the 2 key groups');
  });

  it('caches the unwrapped data key: a second file with the same recipients costs no unwrap', async () => {
    const cache = new DataKeyCache();
    const encrypted = sops.encrypt({ name: 'c.yaml', plaintext: 'a: b\n', args: ['--age', recipient(0)] });
    await decryptSopsFile({ path: 'c.yaml', content: encrypted, keys: ring, cache });
    expect(cache.size).toBe(1);
    await decryptSopsFile({ path: 'c.yaml', content: encrypted, keys: ring, cache });
    expect(cache.size).toBe(1);
  });
});

describe('files written by the sops CLI (OpenPGP)', () => {
  it('decrypts with an armored private key from the Secret, as sops decrypt does with gpg', async () => {
    const { privateKey, publicKey } = await openpgp.generateKey({
      type: 'ecc',
      curve: 'curve25519Legacy',
      userIDs: [{ name: 'sync', email: 'sync@example.com' }],
      format: 'armored',
    });
    const fingerprint = (await openpgp.readKey({ armoredKey: publicKey })).getFingerprint().toUpperCase();
    const home = mkdtempSync(join(tmpdir(), 'syncline-gpg-'));
    try {
      writeFileSync(join(home, 'key.asc'), privateKey);
      const imported = spawnSync('gpg', ['--batch', '--homedir', home, '--import', join(home, 'key.asc')], { encoding: 'utf8' });
      expect(imported.status, imported.stderr).toBe(0);
      const encrypted = sops.encrypt({
        name: 'pgp.yaml',
        plaintext: 'apiKey: pgp-secret\nport: 5432\n',
        args: ['--pgp', fingerprint],
        env: { GNUPGHOME: home },
      });
      expect(encrypted.toString()).toContain(`fp: ${fingerprint}`);
      const keys = await parseKeySecret('Secret ns/k', { 'sync.asc': privateKey });
      const ours = await decrypt('pgp.yaml', encrypted, keys);
      expect(documents(ours as string)).toEqual(documents(sops.decrypt({ name: 'pgp.yaml', encrypted, env: { GNUPGHOME: home } }).toString()));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('refuses a passphrase-protected key, naming the Secret key and fingerprint only', async () => {
    const { privateKey } = await openpgp.generateKey({
      type: 'ecc',
      curve: 'curve25519Legacy',
      userIDs: [{ name: 'x' }],
      passphrase: 'pass-phrase',
      format: 'armored',
    });
    const error = await failure(parseKeySecret('Secret ns/k', { 'locked.asc': privateKey }));
    expect(error.code).toBe(SopsErrorCause.InvalidKey);
    expect(error.message).toMatch(/locked\.asc holds a passphrase-protected OpenPGP key \([0-9A-F]{40}\)/);
    expect(error.message).not.toContain('PRIVATE KEY');
  });
});

describe('integrity: the MAC and the values are verified', () => {
  let encrypted: string;
  beforeAll(() => {
    encrypted = sops.encrypt({ name: 'db.yaml', plaintext: secretYaml, args: ['--age', recipient(0)] }).toString();
  });

  const expectMacMismatch = async (content: string): Promise<void> => {
    const error = await failure(decrypt('secrets/db.yaml', content));
    expect(error.code).toBe(SopsErrorCause.MacMismatch);
    expect(error.message).toMatch(/^secrets\/db\.yaml: MAC mismatch/);
    expect(error.message).not.toContain('s3cr3t');
  };

  it('refuses a tampered value', async () => {
    const tampered = encrypted.replace(/(password: ENC\[AES256_GCM,data:)(.)/, (_all, head: string, first: string) => `${head}${first === 'A' ? 'B' : 'A'}`);
    expect(tampered).not.toBe(encrypted);
    await expectMacMismatch(tampered);
  });

  it('refuses a removed key', async () => {
    const removed = encrypted.replace(/\n\s+unicode: ENC\[[^\n]*/, '');
    expect(removed).not.toBe(encrypted);
    await expectMacMismatch(removed);
  });

  it('refuses a value moved to another key (its path is authenticated)', async () => {
    const password = /password: (ENC\[[^\n]*\])/.exec(encrypted)?.[1] ?? '';
    const swapped = encrypted.replace(/(unicode: )ENC\[[^\n]*\]/, `$1${password}`);
    await expectMacMismatch(swapped);
  });

  it('refuses a value copied from another file encrypted for the same key', async () => {
    const other = sops.encrypt({ name: 'db.yaml', plaintext: secretYaml.replace('s3cr3t-P@ss', 'other-pass'), args: ['--age', recipient(0)] }).toString();
    const foreign = /password: (ENC\[[^\n]*\])/.exec(other)?.[1] ?? '';
    await expectMacMismatch(encrypted.replace(/(password: )ENC\[[^\n]*\]/, `$1${foreign}`));
  });

  it('verifies a changed file again even when its earlier bytes were decrypted and cached', async () => {
    const decrypted = new DecryptedFileCache();
    const cache = new DataKeyCache();
    expect(await decryptSopsFile({ path: 'secrets/db.yaml', content: encrypted, keys: ring, cache, decrypted })).toContain('s3cr3t-P@ss');
    const tampered = encrypted.replace(/\n\s+unicode: ENC\[[^\n]*/, '');
    const error = await failure(decryptSopsFile({ path: 'secrets/db.yaml', content: tampered, keys: ring, cache, decrypted }));
    expect(error.code).toBe(SopsErrorCause.MacMismatch);
  });

  it('refuses reordered documents', async () => {
    const [first, second] = encrypted.split('\n---\n');
    await expectMacMismatch(`${second}\n---\n${first}\n`);
  });

  it('refuses a downgrade to mac_only_encrypted', async () => {
    await expectMacMismatch(encrypted.replace(/\n(\s+)version: /, '\n$1mac_only_encrypted: true\n$1version: '));
  });

  it('refuses a half-encrypted file, naming the value by its path and not its content', async () => {
    const half = encrypted.replace(/(password: )ENC\[[^\n]*\]/, '$1plain-text-pw');
    const error = await failure(decrypt('secrets/db.yaml', half));
    expect(error.code).toBe(SopsErrorCause.MalformedFile);
    expect(error.message).toContain('stringData.password is not encrypted');
    expect(error.message).not.toContain('plain-text-pw');
  });
});

describe('keys and bad input', () => {
  it('says a sync without decryption met an encrypted file, naming it and its recipients', async () => {
    const encrypted = sops.encrypt({ name: 'db.yaml', plaintext: 'password: x\n', args: ['--age', recipient(0)] });
    const error = await failure(decrypt('secrets/db.yaml', encrypted, 'none'));
    expect(error.code).toBe(SopsErrorCause.NotConfigured);
    expect(error.message).toContain('secrets/db.yaml: the file is encrypted with sops but the sync has no spec.decryption');
    expect(error.message).toContain(recipient(0));
  });

  it('says which recipients a file was encrypted for when no key of the Secret opens it, without key material', async () => {
    const encrypted = sops.encrypt({ name: 'db.yaml', plaintext: 'password: x\n', args: ['--age', recipient(3)] });
    const error = await failure(decrypt('db.yaml', encrypted));
    expect(error.code).toBe(SopsErrorCause.NoMatchingKey);
    expect(error.message).toContain(`no key in Secret ns/sops-keys opens the file's data key; it was encrypted for age ${recipient(3)}`);
    expect(error.message).not.toContain('AGE-SECRET-KEY');
  });

  it('refuses an .agekey that is not an age identity, naming the line and not its text', async () => {
    const error = await failure(parseKeySecret('Secret ns/k', { 'id.agekey': `${age[0]?.identity}\nnot-a-key-but-secret\n` }));
    expect(error.code).toBe(SopsErrorCause.InvalidKey);
    expect(error.message).toBe('Secret ns/k: key id.agekey line 2 is not an age identity (AGE-SECRET-KEY-1…)');
  });

  it('refuses a Secret with no key at all', async () => {
    expect((await failure(parseKeySecret('Secret ns/k', { other: 'x' }))).code).toBe(SopsErrorCause.KeySecretInvalid);
  });

  it('refuses a file over the size limit before reading it', async () => {
    const big = `a: ${'x'.repeat(50 * 1024 * 1024)}\nsops:\n  version: 3.13.3\n`;
    const error = await failure(decrypt('big.yaml', big));
    expect(error.code).toBe(SopsErrorCause.TooLarge);
    expect(error.message).toMatch(/^big\.yaml: the encrypted file is \d+ bytes, over the limit of 8388608$/);
  });

  it('refuses an unknown sops version', async () => {
    const encrypted = sops.encrypt({ name: 'v.yaml', plaintext: 'a: b\n', args: ['--age', recipient(0)] }).toString();
    const error = await failure(decrypt('v.yaml', encrypted.replace(/version: 3\.\d+\.\d+/, 'version: 9.0.0')));
    expect(error.code).toBe(SopsErrorCause.UnsupportedVersion);
  });

  it('never decrypts a template', async () => {
    const encrypted = sops.encrypt({ name: 'secret.yaml.hbs', plaintext: 'password: {{ values.pw }}\n', args: ['--age', recipient(0)] });
    expect(isSopsEncrypted('t/secret.yaml.hbs', encrypted)).toBe(true);
    expect((await failure(decrypt('t/secret.yaml.hbs', encrypted))).code).toBe(SopsErrorCause.Unsupported);
  });

  it('names file and line when the encrypted file does not parse, without quoting it', async () => {
    const error = await failure(decrypt('bad.yaml', 'a: [unclosed\n  secret-text\nsops:\n  version: 3.13.3\n  mac: x\n'));
    expect(error.code).toBe(SopsErrorCause.MalformedFile);
    expect(error.message).toMatch(/^bad\.yaml: line \d+: does not parse/);
    expect(error.message).not.toContain('secret-text');
  });

  it('keeps every line of a decrypted YAML or JSON file where it is in the committed file', async () => {
    const encrypted = sops.encrypt({ name: 'secret.yaml', plaintext: secretYaml, args: ['--age', recipient(0)] }).toString();
    const ours = (await decrypt('secrets/secret.yaml', encrypted)) as string;
    const committed = encrypted.split('\n');
    // every line reads as committed: keys, indentation and document markers in place, a value where its ENC[…] was
    for (const [index, line] of ours.trimEnd().split('\n').entries()) {
      const at = committed[index] ?? '';
      if (line.trim() === '') continue;
      if (at.includes('ENC[')) expect(line.startsWith(at.slice(0, at.indexOf('ENC[')))).toBe(true);
      else expect(line).toBe(at);
    }
    // and the metadata is gone: only blank lines are left where it was
    expect(ours).not.toMatch(/^sops:/m);
    expect(ours.trimEnd().split('\n').length).toBeLessThan(committed.length);
    const json = sops
      .encrypt({ name: 'v.json', plaintext: '{\n  "a": {"b": "secret-b", "n": 7},\n  "c": [true, "x"]\n}\n', args: ['--age', recipient(0)] })
      .toString();
    const plainJson = (await decrypt('v.json', json)) as string;
    expect(JSON.parse(plainJson)).toEqual({ a: { b: 'secret-b', n: 7 }, c: [true, 'x'] });
    expect(plainJson.split('\n').findIndex((line) => line.includes('secret-b'))).toBe(json.split('\n').findIndex((line) => line.includes('"b"')));
  });

  it('points a render error in a decrypted manifest at the line of the committed file, without quoting values', async () => {
    // given a committed encrypted file whose second document is a ConfigMap without a name
    const plaintext =
      'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n# the password below\nstringData:\n  password: hidden-pw-1\n  user: app\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    team: secret-team-label\ndata:\n  k: v\n';
    const encrypted = sops.encrypt({ name: 'db.yaml', plaintext, args: ['--age', recipient(0)] }).toString();
    const secondDocument = encrypted.split('\n').findIndex((line) => line === '---') + 2;
    // when it is decrypted and rendered
    const decrypted = (await decrypt('app/db.yaml', encrypted)) as string;
    const error = renderError({ files: { 'app/db.yaml': decrypted } });
    // then the error names the file and the line where that document starts in the committed file
    expect(error.reason).toBe(RenderErrorReason.InvalidObject);
    expect(error.file).toBe('app/db.yaml');
    expect(error.line).toBe(secondDocument);
    expect(error.message).toContain('ConfigMap has no metadata.name');
    expect(error.message).not.toContain('hidden-pw-1');
    expect(error.message).not.toContain('secret-team-label');
  });

  it('names file and line of a merge conflict left in an encrypted file, without quoting either side', async () => {
    const ours = sops.encrypt({ name: 'c.yaml', plaintext: 'password: ours-pw\n', args: ['--age', recipient(0)] }).toString();
    const theirs = sops.encrypt({ name: 'c.yaml', plaintext: 'password: theirs-pw\n', args: ['--age', recipient(0)] }).toString();
    const [oursFirst = '', ...oursRest] = ours.split('\n');
    const [theirsFirst = ''] = theirs.split('\n');
    const conflicted = ['<<<<<<< HEAD', oursFirst, '=======', theirsFirst, '>>>>>>> feature', ...oursRest].join('\n');
    const error = await failure(decrypt('secrets/c.yaml', conflicted));
    expect(error.code).toBe(SopsErrorCause.MalformedFile);
    expect(error.message).toMatch(/^secrets\/c\.yaml: line [1-5]: does not parse \([A-Z_]+\)$/);
    expect(error.message).not.toContain('ENC[');
    expect(error.message).not.toContain('HEAD');
  });

  it('does not take a plain file for an encrypted one', () => {
    expect(isSopsEncrypted('a.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {sops: yes}\n')).toBe(false);
    expect(isSopsEncrypted('values.yaml', 'sops:\n  enabled: true\n')).toBe(false);
    expect(isSopsEncrypted('README.md', '# notes about "sops": none\n')).toBe(false);
    expect(isSopsEncrypted('cm.json', JSON.stringify({ kind: 'ConfigMap', data: { sops: { mac: 'x', lastmodified: 'y' } } }))).toBe(false);
    expect(isSopsEncrypted('cm.yaml', 'kind: ConfigMap\ndata:\n  sops:\n    mac: x\n    lastmodified: y\n')).toBe(false);
  });
});

describe('INI files written by the sops CLI', () => {
  const ini = [
    'top = level',
    '; a comment before a section',
    '[database]',
    'user = app',
    'password = p=a;ss # an inline comment',
    'port=5432',
    'spaced = "  padded  "',
    'tick = has`backtick',
    '',
    '[empty]',
    '[cache]',
    '# hash comment',
    'ttl = 1.5',
    'hash = a#b',
    'unicode = héllo ✓',
    'empty =',
    '',
  ].join('\n');

  it('decrypts INI byte for byte as sops decrypt prints it, comments included', async () => {
    const encrypted = sops.encrypt({ name: 'app.ini', plaintext: ini, args: ['--age', recipient(0)] });
    expect(isSopsEncrypted('config/app.ini', encrypted)).toBe(true);
    expect(encrypted.toString()).not.toContain('p=a');
    const ours = await decrypt('config/app.ini', encrypted);
    const theirs = sops.decrypt({ name: 'app.ini', encrypted, env: ageEnv(0) });
    expect(ours).toBe(theirs.toString());
    expect(ours).toContain('password = p=a\n');
  });

  it('decrypts INI with encrypted_regex (some values in plaintext, quoted as go-ini quotes them) and keeps its lines', async () => {
    const encrypted = sops.encrypt({ name: 'app.ini', plaintext: ini, args: ['--age', recipient(0), '--encrypted-regex', '^(password|hash)$'] });
    const ours = (await decrypt('app.ini', encrypted)) as string;
    expect(ours).toBe(sops.decrypt({ name: 'app.ini', encrypted, env: ageEnv(0) }).toString());
    const committed = encrypted.toString().split('\n');
    for (const [index, line] of ours.replace(/\n+$/, '').split('\n').entries()) {
      if (!committed[index]?.includes('ENC[')) expect(line).toBe(committed[index]);
    }
  });

  it('feeds the data mode: the decrypted INI file becomes a Secret key holding what sops decrypt prints', async () => {
    const encrypted = sops.encrypt({ name: 'app.ini', plaintext: ini, args: ['--age', recipient(0)] });
    const plain = await decrypt('app/app.ini', encrypted);
    const [secret] = render({
      files: { 'app/app.ini': plain as string },
      target: { name: 's', namespace: 'ns', data: { type: 'Secret', name: 'app-config' } },
    });
    expect(secret?.['data']).toEqual({ 'app.ini': sops.decrypt({ name: 'app.ini', encrypted, env: ageEnv(0) }).toString('base64') });
  });

  it('refuses a tampered INI value', async () => {
    const encrypted = sops.encrypt({ name: 'app.ini', plaintext: ini, args: ['--age', recipient(0)] }).toString();
    const tampered = encrypted.replace(/(user\s+= ENC\[AES256_GCM,data:)(.)/, (_all, head: string, c: string) => `${head}${c === 'A' ? 'B' : 'A'}`);
    expect((await failure(decrypt('app.ini', tampered))).code).toBe(SopsErrorCause.MacMismatch);
  });
});
