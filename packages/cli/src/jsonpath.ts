// kubectl's JSONPath template dialect (`-o jsonpath=`, `-o custom-columns=`), written after the parser and
// evaluator kubectl itself runs (k8s.io/client-go/util/jsonpath) so the same template prints the same bytes:
// text outside braces, `{.a.b}`, `{.items[*].x}`, slices `[1:3:1]`, unions `[0,2]`, `['key']`, `{..x}`,
// `{.a.*}`, filters `[?(@.x=="y")]` / `[?(@.x)]`, `{range …}…{end}`, quoted literals `{"\n"}`. Maps print as
// compact JSON with sorted keys and Go's HTML escaping, scalars as Go's fmt prints them. Where kubectl's order
// is Go's random map order (`*` and `..` over an object) the keys are taken sorted.
//
// Errors name the character position in the template; runtime errors never print the object (kubectl's dump
// of it would put a Secret's data on the terminal).

/** A template that does not parse or evaluate; `position` is 0-based in the template text (-1: not known). */
export class TemplateError extends Error {
  override readonly name = 'TemplateError';
  readonly template: string;
  readonly position: number;
  readonly problem: string;
  constructor(template: string, position: number, problem: string) {
    super(`${problem}${position < 0 ? '' : ` at character ${position + 1}: ${JSON.stringify(template.slice(0, position + 1))} ← here`}`);
    this.template = template;
    this.position = position;
    this.problem = problem;
  }
}

type Param = { known: boolean; value: number; derived: boolean };
type ListNode = { type: 'list'; nodes: Node[]; at: number };
type Node =
  | ListNode
  | { type: 'text'; text: string; at: number }
  | { type: 'field'; name: string; at: number }
  | { type: 'wildcard'; at: number }
  | { type: 'recursive'; at: number }
  | { type: 'array'; params: readonly [Param, Param, Param]; at: number }
  | { type: 'union'; lists: ListNode[]; at: number }
  | { type: 'filter'; left: ListNode; right: ListNode; operator: string; at: number }
  | { type: 'int'; value: number; at: number }
  | { type: 'float'; value: GoFloat; at: number }
  | { type: 'bool'; value: boolean; at: number }
  | { type: 'identifier'; name: string; at: number };

/** A number the template wrote with a fraction: Go keeps float64 apart from int in comparisons. */
export class GoFloat {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
}

const EOF = '';

/** The parser of k8s.io/client-go/util/jsonpath/parser.go, with positions kept for errors. */
class Parser {
  root: ListNode = { type: 'list', nodes: [], at: 0 };
  private pos = 0;
  private start = 0;

  private readonly input: string;
  /** Where `input` starts in the template the user wrote (sub-parsers of filters and unions). */
  private readonly offset: number;
  private readonly template: string;

  constructor(input: string, offset: number, template: string) {
    this.input = input;
    this.offset = offset;
    this.template = template;
  }

  parse(): ListNode {
    this.parseText(this.root);
    return this.root;
  }

  private fail(problem: string, at = this.pos): never {
    throw new TemplateError(this.template, Math.min(this.offset + at, this.template.length - 1), problem);
  }

  private next(): string {
    if (this.pos >= this.input.length) {
      this.pos++;
      return EOF;
    }
    // The input is walked by code point, as Go walks runes.
    const r = String.fromCodePoint(this.input.codePointAt(this.pos) ?? 0);
    this.pos += r.length;
    return r;
  }

  private peek(): string {
    const r = this.next();
    this.backup(r);
    return r;
  }

  private backup(r: string): void {
    this.pos -= r === EOF ? 1 : r.length;
  }

  private consumeText(): string {
    const value = this.input.slice(this.start, this.pos);
    this.start = this.pos;
    return value;
  }

  private parseText(cur: ListNode): void {
    for (;;) {
      if (this.input.startsWith('{', this.pos)) {
        if (this.pos > this.start) cur.nodes.push({ type: 'text', text: this.consumeText(), at: this.start });
        this.parseLeftDelim(cur);
        return;
      }
      if (this.next() === EOF) break;
    }
    this.pos = Math.min(this.pos, this.input.length);
    if (this.pos > this.start) cur.nodes.push({ type: 'text', text: this.consumeText(), at: this.start });
  }

  private parseLeftDelim(cur: ListNode): void {
    const at = this.pos;
    this.pos += 1;
    this.consumeText();
    const node: ListNode = { type: 'list', nodes: [], at: this.offset + at };
    cur.nodes.push(node);
    this.parseInsideAction(node);
  }

  private parseInsideAction(cur: ListNode): void {
    for (;;) {
      if (this.input.startsWith('}', this.pos)) {
        this.pos += 1;
        this.consumeText();
        this.parseText(this.root);
        return;
      }
      if (this.input.startsWith('[?(', this.pos)) return this.parseFilter(cur);
      if (this.input.startsWith('..', this.pos)) return this.parseRecursive(cur);
      const at = this.pos;
      const r = this.next();
      if (r === EOF || r === '\r' || r === '\n') this.fail('unclosed action', at - 1);
      if (r === ' ' || r === '@' || r === '$') {
        this.consumeText();
        continue;
      }
      if (r === '[') return this.parseArray(cur);
      if (r === '"' || r === "'") return this.parseQuote(cur, r);
      if (r === '.') return this.parseField(cur);
      if (r === '+' || r === '-' || /^\p{Nd}$/u.test(r)) {
        this.backup(r);
        return this.parseNumber(cur);
      }
      if (isAlphaNumeric(r)) {
        this.backup(r);
        return this.parseIdentifier(cur);
      }
      this.fail(`unrecognized character in action: ${goRune(r)}`, at);
    }
  }

  private parseIdentifier(cur: ListNode): void {
    const at = this.pos;
    for (;;) {
      const r = this.next();
      if (isTerminator(r)) {
        this.backup(r);
        break;
      }
    }
    const value = this.consumeText();
    if (value === 'true' || value === 'false') cur.nodes.push({ type: 'bool', value: value === 'true', at: this.offset + at });
    else cur.nodes.push({ type: 'identifier', name: value, at: this.offset + at });
    this.parseInsideAction(cur);
  }

  private parseRecursive(cur: ListNode): void {
    const at = this.pos;
    if (this.input.startsWith('...', this.pos)) this.fail('invalid multiple recursive descent', at);
    this.pos += 2;
    this.consumeText();
    cur.nodes.push({ type: 'recursive', at: this.offset + at });
    const r = this.peek();
    if (isAlphaNumeric(r)) return this.parseField(cur);
    this.parseInsideAction(cur);
  }

  private parseNumber(cur: ListNode): void {
    const at = this.pos;
    const first = this.peek();
    if (first === '+' || first === '-') this.next();
    for (;;) {
      const r = this.next();
      if (r !== '.' && !/^\p{Nd}$/u.test(r)) {
        this.backup(r);
        break;
      }
    }
    const value = this.consumeText();
    if (/^[+-]?[0-9]+$/.test(value)) cur.nodes.push({ type: 'int', value: Number(value), at: this.offset + at });
    else if (/^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$/.test(value)) cur.nodes.push({ type: 'float', value: new GoFloat(Number(value)), at: this.offset + at });
    else this.fail(`cannot parse number ${value}`, at);
    this.parseInsideAction(cur);
  }

  private parseArray(cur: ListNode): void {
    const at = this.start;
    for (;;) {
      const r = this.next();
      if (r === EOF || r === '\n') this.fail('unterminated array', at);
      if (r === ']') break;
    }
    let text = this.consumeText().slice(1, -1);
    if (text === '*') text = ':';
    const parts = text.split(',');
    if (parts.length > 1) {
      // Each part is parsed on its own, as `[part]` (kubectl's union).
      let from = at + 1;
      const lists = parts.map((part) => {
        const trimmed = part.replace(/^ +| +$/g, '');
        const list = subParse(`[${trimmed}]`, this.offset + from + part.indexOf(trimmed) - 1, this.template);
        from += part.length + 1;
        return list;
      });
      cur.nodes.push({ type: 'union', lists, at: this.offset + at });
      return this.parseInsideAction(cur);
    }
    const key = /^'([^']*)'$/.exec(text);
    if (key !== null) {
      cur.nodes.push(...subParse(`.${key[1] ?? ''}`, this.offset + at + 1, this.template).nodes);
      return this.parseInsideAction(cur);
    }
    const slice = /^(-?\d*)(:-?\d*)?(:-?\d*)?$/.exec(text);
    if (slice === null) this.fail(`invalid array index ${text}`, at);
    const params: [Param, Param, Param] = [
      { known: false, value: 0, derived: false },
      { known: false, value: 0, derived: false },
      { known: false, value: 0, derived: false },
    ];
    for (let i = 0; i < 3; i++) {
      let value = slice[i + 1] ?? '';
      const param = params[i] as Param;
      if (value !== '') {
        if (i > 0) value = value.slice(1);
        if (i > 0 && value === '') param.known = false;
        else if (/^[+-]?[0-9]+$/.test(value)) Object.assign(param, { known: true, value: Number(value) });
        else this.fail(`array index ${value} is not a number`, at);
      } else if (i === 1) {
        Object.assign(param, { known: true, value: params[0].value + 1, derived: true });
      }
    }
    cur.nodes.push({ type: 'array', params, at: this.offset + at });
    this.parseInsideAction(cur);
  }

  private parseFilter(cur: ListNode): void {
    const at = this.pos;
    this.pos += 3;
    this.consumeText();
    let begin = false;
    let end = false;
    let pair = '';
    for (;;) {
      const r = this.next();
      if (r === EOF || r === '\n') this.fail('unterminated filter', at);
      if (r === '"' || r === "'") {
        if (!begin) {
          begin = true;
          pair = r;
          continue;
        }
        if (this.input[this.pos - 2] !== '\\' && r === pair) end = true;
      } else if (r === ')' && begin === end) break;
    }
    if (this.next() !== ']') this.fail('unclosed array expect ]', this.pos - 1);
    const text = this.consumeText().slice(0, -2);
    const textAt = at + 3;
    const compare = /^([^!<>=]+)([!<>=]+)(.+?)$/s.exec(text);
    if (compare === null) {
      cur.nodes.push({
        type: 'filter',
        left: subParse(text, this.offset + textAt, this.template),
        right: { type: 'list', nodes: [], at: -1 },
        operator: 'exists',
        at: this.offset + at,
      });
    } else {
      const [, left = '', operator = '', right = ''] = compare;
      cur.nodes.push({
        type: 'filter',
        left: subParse(left, this.offset + textAt, this.template),
        right: subParse(right, this.offset + textAt + left.length + operator.length, this.template),
        operator,
        at: this.offset + at,
      });
    }
    this.parseInsideAction(cur);
  }

  private parseQuote(cur: ListNode, quote: string): void {
    const at = this.start;
    for (;;) {
      const r = this.next();
      if (r === EOF || r === '\n') this.fail('unterminated quoted string', at);
      if (r === quote && this.input[this.pos - 2] !== '\\') break;
    }
    const value = this.consumeText();
    cur.nodes.push({ type: 'text', text: unquote(value, () => this.fail(`unquote string ${value} error invalid syntax`, at)), at: this.offset + at });
    this.parseInsideAction(cur);
  }

  private parseField(cur: ListNode): void {
    const at = this.start;
    this.consumeText();
    for (;;) {
      const r = this.next();
      if (r === '\\') this.next();
      else if (isTerminator(r)) {
        this.backup(r);
        break;
      }
    }
    const value = this.consumeText();
    if (value === '*') cur.nodes.push({ type: 'wildcard', at: this.offset + at });
    else cur.nodes.push({ type: 'field', name: value.replaceAll('\\', ''), at: this.offset + at });
    this.parseInsideAction(cur);
  }
}

/** A filter side or union member: parsed as an action of its own (`{text}`), positions kept in the template. */
function subParse(text: string, offset: number, template: string): ListNode {
  const root = new Parser(`{${text}}`, offset - 1, template).parse();
  const first = root.nodes[0];
  if (first?.type !== 'list') throw new TemplateError(template, offset, 'empty expression');
  return first;
}

function isTerminator(r: string): boolean {
  return r === EOF || r === ' ' || r === '\t' || r === '\r' || r === '\n' || '.,[]$@{}'.includes(r);
}

function isAlphaNumeric(r: string): boolean {
  return r === '_' || /^[\p{L}\p{Nd}]$/u.test(r);
}

/** Go's %#U of a rune: U+007B '{'. */
function goRune(r: string): string {
  return `U+${(r.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')} '${r}'`;
}

/** Go's strconv.Unquote of a "…" or '…' literal (a single-quoted one may hold several characters here). */
function unquote(quoted: string, invalid: () => never): string {
  const body = quoted.slice(1, -1);
  const quote = quoted[0];
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i] ?? '';
    if (c === '\n' || (c === quote && quote === '"')) invalid();
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[++i] ?? '';
    const simple: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"' };
    if (e in simple) {
      if ((e === "'" && quote === '"') || (e === '"' && quote === "'")) invalid();
      out += simple[e];
    } else if (e === 'x' || e === 'u' || e === 'U') {
      const digits = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(i + 1, i + 1 + digits);
      if (!new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(hex)) invalid();
      out += e === 'x' ? String.fromCharCode(parseInt(hex, 16)) : String.fromCodePoint(parseInt(hex, 16));
      i += digits;
    } else if (/^[0-7]$/.test(e)) {
      const octal = body.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(octal)) invalid();
      out += String.fromCharCode(parseInt(octal, 8));
      i += 2;
    } else invalid();
  }
  return out;
}

/** A parsed template, ready to run on objects as JSON gives them. */
export type Template = { readonly text: string; readonly root: ListNode };

export function parseTemplate(text: string): Template {
  return { text, root: new Parser(text, 0, text).parse() };
}

/**
 * Nothing found is no output (kubectl's --allow-missing-template-keys=true); `null` in the object is a value.
 * A value is undefined when Go would hold an invalid reflect.Value.
 */
type Value = unknown;

/** The evaluator of k8s.io/client-go/util/jsonpath/jsonpath.go (its range bookkeeping included). */
class Evaluator {
  private beginRange = 0;
  private inRange = 0;
  private endRange = 0;
  private lastEndNode: Node | undefined;
  private stack = 0;

  private readonly template: Template;

  constructor(template: Template) {
    this.template = template;
  }

  findResults(data: Value, nodes: readonly Node[]): Value[][] {
    const full: Value[][] = [];
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i] as Node;
      const results = this.walk([data], node);
      if (this.endRange > 0 && this.endRange <= this.inRange) {
        this.endRange--;
        this.lastEndNode = node;
        break;
      }
      if (this.beginRange > 0) {
        this.beginRange--;
        this.inRange++;
        if (results.length > 0) for (const value of results) full.push(...this.findResults(value, nodes.slice(i + 1)));
        else this.findResults(undefined, nodes.slice(i + 1));
        this.inRange--;
        for (let k = i + 1; k < nodes.length; k++) {
          if (nodes[k] === this.lastEndNode) {
            i = k;
            break;
          }
        }
        continue;
      }
      full.push(results);
    }
    return full;
  }

  private fail(node: Node, problem: string): never {
    throw new TemplateError(this.template.text, node.at, problem);
  }

  private walk(input: Value[], node: Node): Value[] {
    switch (node.type) {
      case 'list': {
        let current = input;
        for (const child of node.nodes) current = this.walk(current, child);
        return current;
      }
      case 'text':
        return [node.text];
      case 'field':
        return this.field(input, node.name);
      case 'array':
        return this.array(input, node);
      case 'filter':
        return this.filter(input, node);
      case 'int':
      case 'bool':
      case 'float':
        return input.map(() => node.value);
      case 'wildcard':
        return input.flatMap((value) => children(value));
      case 'recursive':
        return this.recursive(input);
      case 'union':
        return node.lists.flatMap((list) => this.walk(input, list));
      case 'identifier':
        return this.identifier(input, node);
    }
  }

  private field(input: Value[], name: string): Value[] {
    const results: Value[] = [];
    for (const value of input) {
      if (!isMap(value)) continue;
      if (Object.hasOwn(value, name)) results.push(value[name]);
    }
    return results;
  }

  private array(input: Value[], node: Extract<Node, { type: 'array' }>): Value[] {
    const result: Value[] = [];
    for (const value of input) {
      if (value === null) continue;
      if (!Array.isArray(value)) this.fail(node, `${goType(value)} is not array or slice`);
      const [p0, p1, p2] = node.params.map((p) => ({ ...p }));
      if (p0 === undefined || p1 === undefined || p2 === undefined) continue;
      const length = value.length;
      if (!p0.known) p0.value = 0;
      if (p0.value < 0) p0.value += length;
      if (!p1.known) p1.value = length;
      if (p1.value < 0 || (p1.value === 0 && p1.derived)) p1.value += length;
      if (p1.value === p0.value) return result;
      if (p0.value >= length || p0.value < 0) this.fail(node, `array index out of bounds: index ${p0.value}, length ${length}`);
      if (p1.value > length || p1.value < 0) this.fail(node, `array index out of bounds: index ${p1.value - 1}, length ${length}`);
      if (p0.value > p1.value) this.fail(node, `starting index ${p0.value} is greater than ending index ${p1.value}`);
      let step = 1;
      if (p2.known) {
        if (p2.value <= 0) this.fail(node, 'step must be > 0');
        step = p2.value;
      }
      const slice = value.slice(p0.value, p1.value);
      for (let i = 0; i < slice.length; i += step) result.push(slice[i]);
    }
    return result;
  }

  private filter(input: Value[], node: Extract<Node, { type: 'filter' }>): Value[] {
    const results: Value[] = [];
    for (const value of input) {
      if (!Array.isArray(value)) this.fail(node, `${goPrint(value)} is not array or slice and cannot be filtered`);
      for (const item of value) {
        const lefts = this.walk([item], node.left);
        if (node.operator === 'exists') {
          if (lefts.length > 0) results.push(item);
          continue;
        }
        if (lefts.length === 0) continue;
        if (lefts.length > 1) this.fail(node, 'can only compare one element at a time');
        const rights = this.walk([item], node.right);
        if (rights.length === 0) continue;
        if (rights.length > 1) this.fail(node, 'can only compare one element at a time');
        if (compare(lefts[0], rights[0], node.operator, (problem) => this.fail(node, problem))) results.push(item);
      }
    }
    return results;
  }

  private recursive(input: Value[]): Value[] {
    const result: Value[] = [];
    for (const value of input) {
      const inner = typeof value === 'string' ? [...Buffer.from(value)] : children(value);
      if (inner.length === 0) continue;
      result.push(value, ...this.recursive(inner));
    }
    return result;
  }

  private identifier(input: Value[], node: Extract<Node, { type: 'identifier' }>): Value[] {
    if (node.name === 'range') {
      this.stack++;
      this.beginRange++;
      return input;
    }
    if (node.name === 'end') {
      if (this.endRange < this.inRange) {
        this.endRange++;
        return [];
      }
      if (this.stack === 0) this.fail(node, 'not in range, nothing to end');
      this.stack--;
      return [];
    }
    this.fail(node, `unrecognized identifier ${node.name}`);
  }
}

function isMap(value: Value): value is Record<string, Value> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof GoFloat);
}

/** The values under an object (keys sorted: Go's map order is random) or an array. */
function children(value: Value): Value[] {
  if (Array.isArray(value)) return value;
  if (isMap(value))
    return Object.keys(value)
      .sort()
      .map((key) => value[key]);
  if (typeof value === 'string') return [...Buffer.from(value)];
  return [];
}

/** Go's basic kind of a decoded JSON value, as text/template compares them. */
function basicKind(value: Value): 'bool' | 'int' | 'float' | 'string' | undefined {
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'string') return 'string';
  if (value instanceof GoFloat) return 'float';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return undefined;
}

/** text/template's eq, ne, lt, le, gt, ge on two values. */
function compare(left: Value, right: Value, operator: string, fail: (problem: string) => never): boolean {
  const a = left instanceof GoFloat ? left.value : left;
  const b = right instanceof GoFloat ? right.value : right;
  const kindA = basicKind(left);
  const kindB = basicKind(right);
  if (operator === '==' || operator === '!=') {
    if (kindA === undefined || kindB === undefined) {
      if (kindA === undefined && kindB === undefined && left === null && right === null) return operator === '==';
      fail(kindA === undefined && kindB === undefined ? 'invalid type for comparison' : 'incompatible types for comparison');
    }
    if (kindA !== kindB) fail('incompatible types for comparison');
    return (a === b) === (operator === '==');
  }
  if (!['<', '>', '<=', '>='].includes(operator)) fail(`unrecognized filter operator ${operator}`);
  if (kindA === undefined || kindB === undefined || kindA === 'bool' || kindB === 'bool') fail('invalid type for comparison');
  if (kindA !== kindB) fail('incompatible types for comparison');
  const x = a as number | string;
  const y = b as number | string;
  switch (operator) {
    case '<':
      return x < y;
    case '>':
      return x > y;
    case '<=':
      return x <= y;
    default:
      return x >= y;
  }
}

/**
 * Runs a template on an object and returns what kubectl prints: each `{…}`'s results joined by one space,
 * maps and lists as compact JSON, the rest as Go prints it. `asJson`: -o jsonpath-as-json (an indented JSON
 * array of the results).
 */
export function executeTemplate(template: Template, data: unknown, options: { asJson?: boolean } = {}): string {
  const results = new Evaluator(template).findResults(data, template.root.nodes);
  let out = '';
  for (const values of results) {
    if (options.asJson === true) {
      out += `${goJson(values, '    ', '')}\n`;
      continue;
    }
    out += values.map((value) => (Array.isArray(value) || isMap(value) ? goJson(value, '', '') : goPrint(value))).join(' ');
  }
  return out;
}

/** The values a template finds, as custom-columns reads them (each `{…}` a list of values). */
export function findValues(template: Template, data: unknown): unknown[][] {
  return new Evaluator(template).findResults(data, template.root.nodes);
}

/** Go's json.Marshal / MarshalIndent of decoded JSON: keys sorted, <, >, & and U+2028/9 escaped. */
export function goJson(value: Value, indent: string, prefix: string): string {
  const nl = indent === '' ? '' : `\n${prefix}`;
  if (value instanceof GoFloat) return goJsonNumber(value.value);
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return goJsonNumber(value);
  if (typeof value === 'string') return goJsonString(value);
  if (typeof value === 'boolean') return String(value);
  const inner = `${prefix}${indent}`;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[${value.map((v) => `${nl}${indent}${goJson(v, indent, inner)}`).join(',')}${nl}]`;
  }
  const map = value as Record<string, Value>;
  const keys = Object.keys(map).sort();
  if (keys.length === 0) return '{}';
  const sep = indent === '' ? ':' : ': ';
  return `{${keys.map((k) => `${nl}${indent}${goJsonString(k)}${sep}${goJson(map[k], indent, inner)}`).join(',')}${nl}}`;
}

function goJsonString(text: string): string {
  return JSON.stringify(text).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`);
}

/** encoding/json's float format (ES6's, as JavaScript's), integers as integers. */
function goJsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** Go's fmt.Sprint of a decoded JSON value: map[a:1 b:x], [a b], <nil>, floats as %v. */
export function goPrint(value: Value): string {
  if (value === undefined) return '<no value>';
  if (value === null) return '<nil>';
  if (value instanceof GoFloat) return goFloat(value.value);
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : goFloat(value);
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(goPrint).join(' ')}]`;
  const map = value as Record<string, Value>;
  return `map[${Object.keys(map)
    .sort()
    .map((k) => `${k}:${goPrint(map[k])}`)
    .join(' ')}]`;
}

/** Go's %v of a float64 (strconv's shortest 'g'): exponent form when the exponent is < -4 or >= 6. */
function goFloat(n: number): string {
  if (!Number.isFinite(n)) return Number.isNaN(n) ? 'NaN' : n > 0 ? '+Inf' : '-Inf';
  if (n === 0) return Object.is(n, -0) ? '-0' : '0';
  const [mantissa = '', exponentText = '0'] = n.toExponential().split('e');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 6) return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  return String(n);
}

function goType(value: Value): string {
  if (isMap(value)) return 'map[string]interface {}';
  const kind = basicKind(value);
  return kind === 'int' ? 'int64' : kind === 'float' ? 'float64' : (kind ?? 'interface {}');
}
