// Message templates: a Handlebars template that turns one notification into a request body (the webhook
// Provider's spec.template). Not the manifest renderer: a message is text for another system, so output is
// not HTML-escaped (noEscape) and a missing field renders empty instead of failing the delivery.
import Handlebars from 'handlebars';

export type MessageTemplate = (context: Readonly<Record<string, unknown>>) => string;

/**
 * Compiles `source` once (a syntax error throws here, naming the template's line); the result renders a
 * context. `{{json x}}` writes x as JSON (a quoted, escaped string for text), for JSON bodies.
 */
export function compileMessageTemplate(source: string): MessageTemplate {
  const handlebars = Handlebars.create();
  handlebars.registerHelper('json', (value: unknown) => new handlebars.SafeString(JSON.stringify(value ?? null)));
  // Precompiling now reports a syntax error when the Provider is read, not at its first delivery.
  handlebars.precompile(source, { noEscape: true });
  const template = handlebars.compile(source, { noEscape: true, strict: false });
  return (context) => template(context);
}
