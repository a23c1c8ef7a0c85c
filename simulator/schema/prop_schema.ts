/**
 * The shape of one property in PVE's API schema: apart from facts.ts so that facts.ts and
 * exceptions.ts (which facts.ts applies) both import it without importing each other.
 *
 * @module
 */

/** One property's schema, as PVE's JSONSchema keeps it (0/1 for flags). */
export interface PropSchema {
  type?: string;
  optional?: number;
  enum?: string[];
  pattern?: string;
  /** A named format (`pve-vmid`, `dns-name-list`) or an inline property-string format. */
  format?: string | Record<string, PropSchema>;
  minimum?: number | string;
  maximum?: number | string;
  maxLength?: number;
  minLength?: number;
  default?: unknown;
  default_key?: number;
  alias?: string;
  keyAlias?: string;
  requires?: string;
  items?: PropSchema;
  properties?: Record<string, PropSchema>;
  additionalProperties?: number | PropSchema;
}
