import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import type { FastifySchemaCompiler } from 'fastify';

// The admin API's request validation: TypeBox, made strict where it was lenient. TypeBox converts
// query strings before checking them, and that conversion coerces: `limit=1.5` became 1, `0x10`
// 16, ` 5` 5, `active=1` true. And the `date-time` format accepts instants JavaScript and Postgres
// can not represent (a leap second, year 0), which used to reach SQL as NaN dates and end as 500s.
// Every refusal here is a 400 whose message names the parameter (`querystring/limit ...`).

type Schema = Parameters<typeof TypeBoxValidatorCompiler>[0]['schema'];
interface PropertySchema {
  type?: unknown;
  format?: unknown;
}

const INTEGER = /^(0|[1-9][0-9]{0,15})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * An RFC 3339 date-time that names a real instant JavaScript and Postgres agree on: a calendar
 * date that exists, hours below 24, no leap second (JavaScript has none), years 0001 to 9999.
 */
export function isRepresentableDateTime(value: string): boolean {
  const m = DATE_TIME.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (year < 1 || hour > 23 || minute > 59 || second > 59) return false;
  const calendar = new Date(Date.UTC(2000, month - 1, day));
  // Date.UTC rolls February 30th over into March; a real date comes back unchanged (2000 is a leap year)
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return false;
  if (month === 2 && day === 29 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0))) return false;
  return !Number.isNaN(Date.parse(value));
}

const invalid = (message: string): { error: Error } => ({ error: new Error(message) });

const propertiesOf = (schema: Schema): Record<string, PropertySchema> =>
  (schema as { properties?: Record<string, PropertySchema> }).properties ?? {};

/** Query values as the schema's scalar types, strictly: anything but canonical text is refused. */
function strictQuery(schema: Schema, query: unknown): { value: Record<string, unknown> } | { error: Error } {
  const props = propertiesOf(schema);
  const out: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    const type = props[key]?.type;
    if (Array.isArray(raw) && type !== 'array') return invalid(`querystring/${key} must be given once`);
    if (typeof raw === 'string' && type === 'integer') {
      if (!INTEGER.test(raw)) return invalid(`querystring/${key} must be an integer in decimal digits`);
      out[key] = Number(raw);
    } else if (typeof raw === 'string' && type === 'boolean') {
      if (raw !== 'true' && raw !== 'false') return invalid(`querystring/${key} must be true or false`);
      out[key] = raw === 'true';
    } else {
      out[key] = raw;
    }
  }
  return { value: out };
}

function checkDateTimes(schema: Schema, part: string, value: unknown): { error: Error } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, prop] of Object.entries(propertiesOf(schema))) {
    const v = (value as Record<string, unknown>)[key];
    if (prop.format === 'date-time' && typeof v === 'string' && !isRepresentableDateTime(v)) {
      return invalid(`${part}/${key} must be an RFC 3339 date-time of a real instant (years 0001-9999, no leap second)`);
    }
  }
  return undefined;
}

export const strictValidatorCompiler: FastifySchemaCompiler<Schema> = (route) => {
  const typebox = TypeBoxValidatorCompiler(route);
  const part = route.httpPart ?? 'request';
  return (input: unknown) => {
    let value = input;
    if (part === 'querystring') {
      const strict = strictQuery(route.schema, input);
      if ('error' in strict) return strict;
      value = strict.value;
    }
    const result = typebox(value);
    // TypeBox's compiler always answers { value } or { error }, never a boolean or a promise
    if (typeof result !== 'object' || !('value' in result) || result.error !== undefined) return result;
    return checkDateTimes(route.schema, part, result.value) ?? result;
  };
};
