// The -o formats of `syncline get`, parsed once where the flag enters: kubectl's names, including
// jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC and custom-columns-file=FILE.
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { TemplateError, executeTemplate, parseTemplate, type Template } from './jsonpath.ts';
import { formatCustomColumns, parseColumnsFile, parseColumnsSpec, type Column } from './custom-columns.ts';

export const PLAIN_FORMATS = ['table', 'wide', 'json', 'yaml', 'name'] as const;
export type PlainFormat = (typeof PLAIN_FORMATS)[number];
export type OutputFormat = PlainFormat | { readonly jsonpath: Template; readonly asJson: boolean } | { readonly columns: readonly Column[] };

/** The -o value as typed → its format; an error that names the format, the template and the position. */
export function parseOutputFormat(value: string): OutputFormat {
  if ((PLAIN_FORMATS as readonly string[]).includes(value)) return value as PlainFormat;
  const eq = value.indexOf('=');
  const [name, argument] = eq === -1 ? [value, undefined] : [value.slice(0, eq), value.slice(eq + 1)];
  const allowed = `${PLAIN_FORMATS.join(', ')}, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE`;
  if (argument === undefined) {
    if (['jsonpath', 'jsonpath-as-json', 'jsonpath-file', 'custom-columns', 'custom-columns-file'].includes(name))
      throw new InvalidArgumentError(`${name} needs a value: -o ${name}=...`);
    throw new InvalidArgumentError(`unable to match a printer suitable for the output format "${value}", allowed formats are: ${allowed}`);
  }
  switch (name) {
    case 'jsonpath':
    case 'jsonpath-as-json':
    case 'jsonpath-file': {
      const text = name === 'jsonpath-file' ? readArgumentFile(argument, name) : argument;
      try {
        return { jsonpath: parseTemplate(text), asJson: name === 'jsonpath-as-json' };
      } catch (error) {
        if (error instanceof TemplateError) throw new InvalidArgumentError(`error parsing jsonpath ${text}: ${error.message}`);
        throw error;
      }
    }
    case 'custom-columns':
    case 'custom-columns-file':
      try {
        return { columns: name === 'custom-columns' ? parseColumnsSpec(argument) : parseColumnsFile(readArgumentFile(argument, name), argument) };
      } catch (error) {
        throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
      }
    default:
      throw new InvalidArgumentError(`unable to match a printer suitable for the output format "${value}", allowed formats are: ${allowed}`);
  }
}

function readArgumentFile(file: string, format: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError(`-o ${format}=${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(error)}`);
  }
}

/** A template or columns format applied to what kubectl would hand it: the object, or a v1 List of them. */
export function printTemplated(
  format: Exclude<OutputFormat, PlainFormat>,
  value: unknown,
  options: { items: readonly unknown[]; noHeaders?: boolean },
): string {
  if ('columns' in format) return formatCustomColumns(format.columns, options.items, { noHeaders: options.noHeaders });
  try {
    return executeTemplate(format.jsonpath, value, { asJson: format.asJson });
  } catch (error) {
    if (error instanceof TemplateError) throw new Error(`error executing jsonpath ${JSON.stringify(format.jsonpath.text)}: ${error.message}`);
    throw error;
  }
}
