/**
 * A LogTape-shaped logger that records lines instead of printing them.
 *
 * Message rendering follows swamp's `renderMessageTemplate` /
 * `wrapLoggerWithOutput` (swamp-club/swamp
 * `src/domain/models/in_process_executor.ts`): `{{`/`}}` are escaped braces,
 * `{key}` is filled from the props (a missing key renders empty), and without
 * props a single-brace span is left as written. A tagged-template call
 * (`logger.info\`x ${v}\``) is joined with its values.
 *
 * @module
 */

import type { HarnessLogger, LogLine } from "./types.ts";

function renderTemplate(
  template: string,
  props: Record<string, unknown> | undefined,
): string {
  return template.replace(
    /\{\{|\}\}|\{(\w+)\}/g,
    (match, key: string | undefined) => {
      if (match === "{{") return "{";
      if (match === "}}") return "}";
      return props ? String(props[key!] ?? "") : match;
    },
  );
}

function isPlainProps(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Collects every line logged through the loggers it creates. */
export class LogCollector {
  readonly lines: LogLine[] = [];

  /** Appends one already-rendered line. */
  push(
    level: LogLine["level"],
    message: string,
    props?: Record<string, unknown>,
  ): void {
    const line: LogLine = { level, message };
    if (props && Object.keys(props).length > 0) line.props = props;
    this.lines.push(line);
  }

  /** A logger writing into this collector, with `context` merged into props. */
  logger(context: Record<string, unknown> = {}): HarnessLogger {
    const emit =
      (level: LogLine["level"]) =>
      (message: unknown, ...rest: unknown[]): void => {
        if (Array.isArray(message)) {
          // Tagged template: the strings array interleaved with the values.
          const text = message.reduce(
            (acc: string, part: unknown, i: number) =>
              acc + String(part) + (i < rest.length ? String(rest[i]) : ""),
            "",
          );
          this.push(level, text, { ...context });
          return;
        }
        const props = isPlainProps(rest[0]) ? rest[0] : undefined;
        const text = typeof message === "string"
          ? renderTemplate(message, props)
          : String(message);
        this.push(level, text, { ...context, ...props });
      };
    const logger: HarnessLogger = {
      debug: emit("debug"),
      info: emit("info"),
      warn: emit("warning"),
      warning: emit("warning"),
      error: emit("error"),
      // LogLine has four levels; LogTape's extra two fold into the nearest.
      trace: emit("debug"),
      fatal: emit("error"),
      with: (props) => this.logger({ ...context, ...props }),
      getChild: () => logger,
    };
    return logger;
  }
}
