// Turns the zod API into CustomResourceDefinitions (structural OpenAPI v3) and a Markdown reference.
// Pure: schemas in, objects and text out; generate.ts writes them to crds/ and docs/.
import { z } from 'zod';
import { GROUP, VERSION, crdDefinitions } from './v1alpha1.ts';

type JsonSchema = { [key: string]: unknown };

/** zod's OpenAPI 3.0 output, made structural the way the API server requires. */
export function structuralSchema(schema: z.ZodType): JsonSchema {
  const raw = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return makeStructural(raw);
}

function makeStructural(node: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema' || key === 'id') continue;
    if (key === 'additionalProperties') {
      // Structural schemas forbid additionalProperties beside properties or preserve-unknown-fields, and
      // `false` is the API server's default pruning anyway.
      if (value === false || node['properties'] !== undefined || node['x-kubernetes-preserve-unknown-fields'] === true) continue;
      const inner = value as JsonSchema;
      out[key] = Object.keys(inner).length === 0 ? { 'x-kubernetes-preserve-unknown-fields': true } : makeStructural(inner);
      continue;
    }
    if (key === 'properties') {
      out[key] = Object.fromEntries(Object.entries(value as Record<string, JsonSchema>).map(([name, child]) => [name, makeStructural(child)]));
      continue;
    }
    if (key === 'items') {
      out[key] = makeStructural(value as JsonSchema);
      continue;
    }
    out[key] = value;
  }
  // z.unknown() becomes {}: say explicitly that anything goes there.
  if (out['type'] === undefined && out['x-kubernetes-preserve-unknown-fields'] === undefined && out['properties'] === undefined) {
    out['x-kubernetes-preserve-unknown-fields'] = true;
  }
  return out;
}

export function customResourceDefinitions(): JsonSchema[] {
  return crdDefinitions.map((def) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: def.scope,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: [...def.shortNames],
        categories: ['syncline'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns.map((c) => ({ ...c })),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: def.description,
              required: ['spec'],
              properties: {
                apiVersion: {
                  type: 'string',
                  description: `APIVersion defines the versioned schema of this representation of an object: ${GROUP}/${VERSION}.`,
                },
                kind: { type: 'string', description: `Kind is the REST resource this object represents: ${def.kind}.` },
                // The API server forbids anything but name/generateName under metadata (a description included);
                // kubectl explain shows ObjectMeta's own documentation there.
                metadata: { type: 'object' },
                spec: { ...structuralSchema(def.spec), description: def.specDescription },
                status: { ...structuralSchema(def.status), description: def.statusDescription },
              },
            },
          },
        },
      ],
    },
  }));
}

/** docs/api.md: one table per object type, walked from the same schemas. */
export function apiReference(): string {
  const lines = ['# Syncline API reference', '', `Generated from \`packages/api/src/v1alpha1.ts\` by \`pnpm generate\`; CI fails when it is stale.`, ''];
  for (const def of crdDefinitions) {
    lines.push(`## ${def.kind} (\`${GROUP}/${VERSION}\`, short name \`${def.shortNames.join(', ')}\`)`, '');
    for (const [section, schema] of [
      ['spec', def.spec],
      ['status', def.status],
    ] as const) {
      lines.push(`### ${section}`, '', '| field | type | default | description |', '|---|---|---|---|');
      walk(structuralSchema(schema), section, (path, node, required) => {
        const type = describeType(node);
        const dflt = node['default'] === undefined ? '' : `\`${JSON.stringify(node['default'])}\``;
        const description = [typeof node['description'] === 'string' ? node['description'] : '', required ? '(required)' : '']
          .filter((s) => s !== '')
          .join(' ');
        lines.push(`| \`${path}\` | ${type} | ${dflt} | ${description.replaceAll('|', '\\|')} |`);
      });
      lines.push('');
    }
  }
  return lines.join('\n');
}

function describeType(node: JsonSchema): string {
  if (Array.isArray(node['enum'])) return (node['enum'] as unknown[]).map((v) => `\`${String(v)}\``).join(' \\| ');
  if (node['type'] === 'array') return `[]${describeType((node['items'] as JsonSchema | undefined) ?? {})}`;
  if (typeof node['type'] === 'string') return typeof node['format'] === 'string' ? `${node['type']} (${node['format']})` : node['type'];
  return 'any';
}

function walk(node: JsonSchema, path: string, visit: (path: string, node: JsonSchema, required: boolean) => void): void {
  const properties = node['properties'] as Record<string, JsonSchema> | undefined;
  const items = node['items'] as JsonSchema | undefined;
  const children = properties ?? (items?.['properties'] as Record<string, JsonSchema> | undefined);
  const required = new Set((properties !== undefined ? node['required'] : items?.['required']) as string[] | undefined);
  const prefix = properties !== undefined ? path : `${path}[]`;
  for (const [name, child] of Object.entries(children ?? {})) {
    const childPath = `${prefix}.${name}`;
    visit(childPath, child, required.has(name));
    walk(child, childPath, visit);
  }
}
