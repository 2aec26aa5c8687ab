/** ARGMAX: the index of the largest value along an axis. */
import { argMinMaxOperation } from "./common/arg_min_max.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** ARGMAX (HAL 1.2). */
export const argmax: OperationDefinition<"ARGMAX"> = withSignedQuant8(
  argMinMaxOperation("ARGMAX", true),
);
