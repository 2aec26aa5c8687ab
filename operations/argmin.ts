/** ARGMIN: the index of the smallest value along an axis. */
import { argMinMaxOperation } from "./common/arg_min_max.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** ARGMIN (HAL 1.2). */
export const argmin: OperationDefinition<"ARGMIN"> = withSignedQuant8(
  argMinMaxOperation("ARGMIN", false),
);
