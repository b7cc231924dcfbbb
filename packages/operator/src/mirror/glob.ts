// Namespace-name patterns: an exact name, or a glob where `*` is any run of characters and `?` exactly one.
// Namespace names are DNS-1123 labels ([a-z0-9-], at most 63 characters), so a pattern may hold those and the
// two wildcards and nothing else: `[abc]` classes and regexes are refused rather than read as names.

export interface NamePattern {
  /** As written, trimmed. */
  readonly text: string;
  /** Holds `*` or `?`. */
  readonly glob: boolean;
}

const PATTERN = /^[a-z0-9*?-]{1,63}$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Why `text` is not a name or glob, or `undefined` when it is one. */
export function patternProblem(text: string): string | undefined {
  if (!PATTERN.test(text))
    return `${JSON.stringify(text)} is not a namespace name or glob (lowercase letters, digits, '-', '*' and '?'; at most 63 characters)`;
  if (!isGlob(text) && !DNS_LABEL.test(text)) return `${JSON.stringify(text)} is not a namespace name (it must start and end with a letter or digit)`;
  return undefined;
}

export function isGlob(text: string): boolean {
  return text.includes('*') || text.includes('?');
}

export function isNamespaceName(text: string): boolean {
  return DNS_LABEL.test(text);
}

const compiled = new Map<string, RegExp>();

function regexOf(glob: string): RegExp {
  let re = compiled.get(glob);
  if (re === undefined) {
    // Only [a-z0-9-*?] get here (patternProblem), so no other character needs escaping.
    re = new RegExp(`^${glob.replaceAll('*', '.*').replaceAll('?', '.')}$`);
    // A bounded, pure memo: the same few patterns are matched against every namespace.
    if (compiled.size >= 1_000) compiled.clear();
    compiled.set(glob, re);
  }
  return re;
}

export function matchesPattern(pattern: NamePattern, name: string): boolean {
  return pattern.glob ? regexOf(pattern.text).test(name) : pattern.text === name;
}

/**
 * Read a comma-separated list of names and globs (whitespace around entries and empty entries ignored).
 * Returns the patterns and a problem per bad entry.
 */
export function parsePatternList(text: string): { patterns: NamePattern[]; problems: string[] } {
  const patterns: NamePattern[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '' || seen.has(entry)) continue;
    seen.add(entry);
    const problem = patternProblem(entry);
    if (problem === undefined) patterns.push({ text: entry, glob: isGlob(entry) });
    else problems.push(problem);
  }
  return { patterns, problems };
}
