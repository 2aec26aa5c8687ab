/**
 * The table's type check holds: a definition filed under another operation's type does
 * not compile (`deno check`, which the test task runs first, fails if the expected error
 * disappears), and every registered definition is filed under its own type at run time.
 */
import { strictEqual } from "node:assert/strict";
import { conv2d } from "./conv_2d.ts";
import { implementedOperations, operationDefinition, type OperationTable } from "./table.ts";

// @ts-expect-error: CONV_2D's definition cannot be ADD's.
const misfiled = { ADD: conv2d } satisfies OperationTable;

Deno.test("every registered definition is filed under its own operation type", () => {
  strictEqual(misfiled.ADD.type, "CONV_2D"); // what the compiler refuses would do at run time
  for (const type of implementedOperations()) strictEqual(operationDefinition(type)?.type, type);
});
