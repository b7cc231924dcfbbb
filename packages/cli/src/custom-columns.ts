// `-o custom-columns=HEADER:PATH,...` (and -o custom-columns-file=FILE) as kubectl prints them
// (k8s.io/cli-runtime/pkg/printers/customcolumn.go): each PATH relaxed to a `{.path}` template, a cell's values
// printed with Go's fmt and joined by commas, `<none>` for nothing, laid out by Go's tabwriter.
import { TemplateError, findValues, goPrint, parseTemplate, type Template } from './jsonpath.ts';

export type Column = { readonly header: string; readonly template: Template };

/** `NAME:.metadata.name,READY:{.status…}` → columns; errors name the column and, for a bad path, the character. */
export function parseColumnsSpec(spec: string): Column[] {
  if (spec === '') throw new Error('custom-columns format specified but no custom columns given');
  return spec.split(',').map((part) => {
    const colon = part.indexOf(':');
    if (colon === -1) throw new Error(`unexpected custom-columns spec: ${part}, expected <header>:<json-path-expr>`);
    return { header: part.slice(0, colon), template: relaxedTemplate(part.slice(colon + 1), part.slice(0, colon)) };
  });
}

/** -o custom-columns-file: the headers on the first line, the paths on the second, separated by white space. */
export function parseColumnsFile(text: string, file: string): Column[] {
  const [headerLine = '', pathLine = ''] = text.split('\n');
  const headers = headerLine.trim().split(/\s+/);
  const paths = pathLine.trim().split(/\s+/);
  if (headers.length !== paths.length) throw new Error(`${file}: expected ${headers.length} paths on the second line (one per header), found ${paths.length}`);
  return headers.map((header, i) => ({ header, template: relaxedTemplate(paths[i] ?? '', header) }));
}

/** kubectl's RelaxedJSONPathExpression: `a.b`, `.a.b`, `{a.b}` and `{.a.b}` all mean `{.a.b}`. */
function relaxedTemplate(path: string, header: string): Template {
  if (path === '') return parseTemplate('');
  const match = /^\{\.?([^{}]+)\}$|^\.?([^{}]+)$/s.exec(path);
  if (match === null)
    throw new Error(
      `column ${header}: unexpected path string ${JSON.stringify(path)}, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'`,
    );
  const inner = match[1] ?? match[2] ?? '';
  try {
    return parseTemplate(`{.${inner}}`);
  } catch (error) {
    if (error instanceof TemplateError) throw new Error(`column ${header}: ${error.message}`);
    throw error;
  }
}

/** kubectl's EscapeTerminal: no escape sequence reaches the terminal. */
function escapeTerminal(text: string): string {
  return text.replaceAll('\x1b', '^[').replaceAll('\r', '\\r');
}

/** The rows (header first unless `noHeaders`) for `items`, laid out as kubectl lays them out. */
export function formatCustomColumns(columns: readonly Column[], items: readonly unknown[], options: { noHeaders?: boolean } = {}): string {
  const lines: string[] = [];
  if (options.noHeaders !== true) lines.push(columns.map((c) => c.header).join('\t'));
  for (const item of items) {
    const cells = columns.map((column) => {
      let values: unknown[][];
      try {
        values = findValues(column.template, item);
      } catch (error) {
        if (error instanceof TemplateError) throw new Error(`column ${column.header}: ${error.message}`);
        throw error;
      }
      const texts = values.flat().map((value) => escapeTerminal(goPrint(value)));
      return (values.length === 0 || (values[0]?.length ?? 0) === 0 ? ['<none>', ...texts] : texts).join(',');
    });
    lines.push(cells.join('\t'));
  }
  return tabwriter(lines.map((l) => `${l}\n`).join(''));
}

/**
 * Go's text/tabwriter as kubectl configures it (minwidth 6, padding 3, spaces): tab-terminated cells of
 * consecutive lines form a column block as wide as its widest cell plus the padding; a line's last cell is
 * not aligned.
 */
export function tabwriter(text: string, options: { minWidth?: number; padding?: number } = {}): string {
  const minWidth = options.minWidth ?? 6;
  const padding = options.padding ?? 3;
  const lines = text.split('\n').map((line) => line.split('\t'));
  const widthOf = (cell: string): number => [...cell].length;
  const widths: number[] = [];
  let out = '';
  const writeLines = (from: number, to: number): void => {
    for (let i = from; i < to; i++) {
      const line = lines[i] ?? [];
      line.forEach((cell, j) => {
        out += cell;
        if (j < line.length - 1 && j < widths.length) out += ' '.repeat(Math.max(0, (widths[j] ?? 0) - widthOf(cell)));
      });
      if (i + 1 < lines.length) out += '\n';
    }
  };
  const format = (line0: number, line1: number): void => {
    const column = widths.length;
    let start = line0;
    for (let current = line0; current < line1; current++) {
      if (column >= (lines[current]?.length ?? 0) - 1) continue;
      writeLines(start, current);
      start = current;
      let width = minWidth;
      for (; current < line1; current++) {
        const line = lines[current] ?? [];
        if (column >= line.length - 1) break;
        width = Math.max(width, widthOf(line[column] ?? '') + padding);
      }
      widths.push(width);
      format(start, current);
      widths.pop();
      start = current;
      current--;
    }
    writeLines(start, line1);
  };
  format(0, lines.length);
  return out;
}
